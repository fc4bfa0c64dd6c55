// TraceDevice: shape validation as a real backend does it, and cost records instead of math.
#include "runtime/trace/trace_device.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace spsim::rt::trace {

namespace {

// Storage without data; its lifetime brackets an Alloc and a Free record.
class TraceStorage final : public Storage {
 public:
  TraceStorage(std::size_t bytes, Recorder recorder) : bytes_(bytes), recorder_(std::move(recorder)) {
    recorder_.add(Alloc{id(), bytes_});
  }
  ~TraceStorage() override {
    try {
      recorder_.add(Free{id(), bytes_});
    } catch (...) {  // out of memory while growing the log: lose the record rather than terminate
    }
  }
  TraceStorage(const TraceStorage&) = delete;
  TraceStorage& operator=(const TraceStorage&) = delete;
  [[nodiscard]] void* data() override { return nullptr; }
  [[nodiscard]] std::size_t bytes() const override { return bytes_; }

 private:
  std::size_t bytes_;
  Recorder recorder_;
};

}  // namespace

std::shared_ptr<Storage> make_trace_storage(std::size_t bytes, Recorder recorder) {
  return std::make_shared<TraceStorage>(bytes, std::move(recorder));
}

namespace {

[[noreturn]] void fail(std::string_view op, const std::string& msg) {
  throw RuntimeError(std::string(op) + ": " + msg);
}

void same_shape(std::string_view op, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  if (a.shape() != b.shape())
    fail(op, std::string(an) + " " + to_string(a.shape()) + " and " + bn + " " + to_string(b.shape()) +
                 " differ");
}

void expect_shape(std::string_view op, const Tensor& t, const char* what, const Shape& want) {
  if (t.shape() != want)
    fail(op, std::string(what) + " is " + to_string(t.shape()) + ", expected " + to_string(want));
}

[[nodiscard]] std::size_t norm_dim(std::string_view op, int dim, int ndim) {
  const int k = dim < 0 ? dim + ndim : dim;
  if (k < 0 || k >= ndim)
    fail(op, "dim " + std::to_string(dim) + " out of range for a " + std::to_string(ndim) + "-D tensor");
  return static_cast<std::size_t>(k);
}

[[nodiscard]] Shape drop_last(const Shape& s) {
  return Shape(s.begin(), s.end() - (s.empty() ? 0 : 1));
}
[[nodiscard]] Shape with_last(Shape s, std::int64_t last) {
  s.back() = last;
  return s;
}

// expect_shape against drop_last(base) and with_last(base, last), compared in place: the shapes are
// built only to name them in the error. (Every attention block checked two such shapes, and their
// allocations were a tenth of the producer's.)
void expect_drop_last(std::string_view op, const Tensor& t, const char* what, const Shape& base) {
  const Shape& s = t.shape();
  if (!base.empty() && s.size() + 1 == base.size() && std::equal(s.begin(), s.end(), base.begin())) return;
  expect_shape(op, t, what, drop_last(base));
}
void expect_with_last(std::string_view op, const Tensor& t, const char* what, const Shape& base,
                      std::int64_t last) {
  const Shape& s = t.shape();
  if (!base.empty() && s.size() == base.size() && std::equal(base.begin(), base.end() - 1, s.begin()) &&
      s.back() == last)
    return;
  expect_shape(op, t, what, with_last(base, last));
}

}  // namespace

TraceDevice::TraceDevice(DType dtype, Recorder recorder) : dtype_(dtype), recorder_(std::move(recorder)) {}

void TraceDevice::check(const Tensor& t, const char* op, const char* what) const {
  if (!t.defined()) fail(op, std::string(what) + " is undefined");
  if (t.dtype() != dtype_)
    fail(op, std::string(what) + " is " + std::string(dtype_name(t.dtype())) + " on a " +
                 std::string(dtype_name(dtype_)) + " device");
}

void TraceDevice::check_or_accumulator(const Tensor& t, const char* op, const char* what) const {
  if (t.defined() && t.dtype() == accumulator_dtype(dtype_)) return;
  check(t, op, what);
}

void TraceDevice::check_all(const char* op,
                            std::initializer_list<std::pair<const Tensor*, const char*>> tensors) const {
  for (auto [t, what] : tensors) check(*t, op, what);
}

void TraceDevice::record(std::string_view op, const OpCost& cost, std::span<const Shape* const> shapes,
                         bool skipped) {
  recorder_.add(ComputeOp{op, cost.flops, cost.bytes_read, cost.bytes_written,
                          recorder_.intern(shapes, cost.kernels), cost.op_class, skipped});
}

void TraceDevice::record(std::string_view op, const OpCost& cost,
                         std::initializer_list<std::reference_wrapper<const Shape>> shapes, bool skipped) {
  constexpr std::size_t kMost = 16;
  if (shapes.size() > kMost) throw std::logic_error("TraceDevice::record: more than 16 operands");
  std::array<const Shape*, kMost> at{};
  std::size_t n = 0;
  for (const Shape& s : shapes) at[n++] = &s;
  record(op, cost, std::span<const Shape* const>(at.data(), n), skipped);
}

void TraceDevice::record(std::string_view op, const OpCost& cost, const std::vector<Shape>& shapes, bool skipped) {
  std::vector<const Shape*> at;
  at.reserve(shapes.size());
  for (const Shape& s : shapes) at.push_back(&s);
  record(op, cost, std::span<const Shape* const>(at), skipped);
}

// ---- memory ------------------------------------------------------------------------------------

Tensor TraceDevice::allocate(const Shape& shape, DType dt, const char* op) {
  for (auto d : shape)
    if (d < 0) fail(op, "negative dimension in " + to_string(shape));
  const auto bytes = static_cast<std::size_t>(numel(shape)) * dtype_bytes(dt);
  return Tensor(std::make_shared<TraceStorage>(bytes, recorder_), shape, dt);
}

Tensor TraceDevice::empty(const Shape& shape) {
  return allocate(shape, dtype_, "empty");
}

Tensor TraceDevice::empty_accumulator(const Shape& shape) {
  return allocate(shape, accumulator_dtype(dtype_), "empty_accumulator");
}

void TraceDevice::fill(Tensor& t, double value) {
  check_or_accumulator(t, "fill", "t");
  if (value == 0)
    cleared_.insert(t.storage()->id());
  else
    written(t);
  record("fill", cost::fill(t.shape(), t.dtype()), {t.shape()});
}

Tensor TraceDevice::from_host(std::span<const double> values, const Shape& shape) {
  if (!values.empty() && static_cast<std::int64_t>(values.size()) != numel(shape))
    fail("from_host", std::to_string(values.size()) + " values for shape " + to_string(shape));
  return empty(shape);
}

std::vector<double> TraceDevice::to_host(const Tensor& t) {
  check(t, "to_host", "t");
  return std::vector<double>(static_cast<std::size_t>(t.numel()), 0.0);
}

void TraceDevice::copy(const Tensor& src, Tensor& dst) {
  check_or_accumulator(src, "copy", "src");
  check_or_accumulator(dst, "copy", "dst");
  if (src.numel() != dst.numel())
    fail("copy", "src " + to_string(src.shape()) + " and dst " + to_string(dst.shape()) + " differ in numel");
  written(dst);
  record("copy", cost::convert(dst.shape(), src.dtype(), dst.dtype()), {src.shape(), dst.shape()});
}

// ---- linear algebra and attention --------------------------------------------------------------

void TraceDevice::gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double /*alpha*/,
                       double beta) {
  check(a, "gemm", "a");
  check(b, "gemm", "b");
  check(c, "gemm", "c");
  record("gemm", cost::gemm(a.shape(), b.shape(), c.shape(), ta, tb, dtype_, beta != 0.0),
         {a.shape(), b.shape(), c.shape()});
}

void TraceDevice::softmax(const Tensor& x, Tensor& y, double /*scale*/, const Mask& mask) {
  check(x, "softmax", "x");
  check(y, "softmax", "y");
  same_shape("softmax", x, "x", y, "y");
  const Matrix3 m = as_matrix3(x.shape(), "softmax: x");
  check_mask(mask, m.rows, m.cols);
  record("softmax", cost::softmax(x.shape(), dtype_), {x.shape(), y.shape()});
}

void TraceDevice::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double /*scale*/) {
  check(y, "softmax_backward", "y");
  check(dy, "softmax_backward", "dy");
  check(dx, "softmax_backward", "dx");
  same_shape("softmax_backward", y, "y", dy, "dy");
  same_shape("softmax_backward", y, "y", dx, "dx");
  (void)as_matrix3(y.shape(), "softmax_backward: y");
  record("softmax_backward", cost::softmax_backward(y.shape(), dtype_), {y.shape(), dy.shape(), dx.shape()});
}

void TraceDevice::attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                                          Tensor& lse, double /*scale*/, const Mask& mask) {
  constexpr const char* op = "attention_block_forward";
  check_all(op, {{&q, "q"}, {&k, "k"}, {&v, "v"}, {&o, "o"}, {&lse, "lse"}});
  const AttentionDims a = attention_dims(q.shape(), k.shape(), v.shape());
  expect_with_last(op, o, "o", q.shape(), a.dv);
  expect_drop_last(op, lse, "lse", q.shape());
  const OpCost c = cost::attention_forward(q.shape(), k.shape(), v.shape(), dtype_, mask);
  // A later merge of this block's output merges only the rows it touched (cost::merge_attention).
  if (c.kernels.attention && c.kernels.attention->active_rows < 1)
    block_rows_[o.storage()->id()] = c.kernels.attention->active_rows;
  record(op, c, {q.shape(), k.shape(), v.shape(), o.shape(), lse.shape()}, c.bytes() == 0);
}

void TraceDevice::attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                           const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk,
                                           Tensor& dv, double /*scale*/, const Mask& mask) {
  constexpr const char* op = "attention_block_backward";
  check_all(op, {{&q, "q"}, {&k, "k"}, {&v, "v"}, {&o, "o"}, {&d_o, "d_o"}, {&lse, "lse"}});
  check_or_accumulator(dq, op, "dq");  // the gradients may be fp32 accumulators (empty_accumulator)
  check_or_accumulator(dk, op, "dk");
  check_or_accumulator(dv, op, "dv");
  const AttentionDims a = attention_dims(q.shape(), k.shape(), v.shape());
  expect_with_last(op, o, "o", q.shape(), a.dv);
  expect_shape(op, d_o, "d_o", o.shape());
  expect_drop_last(op, lse, "lse", q.shape());
  expect_shape(op, dq, "dq", q.shape());
  expect_shape(op, dk, "dk", k.shape());
  expect_shape(op, dv, "dv", v.shape());
  const auto accumulates = [&](const Tensor& g) { return !cleared_.contains(g.storage()->id()); };
  const cost::Accumulated acc{accumulates(dq), accumulates(dk), accumulates(dv)};
  const OpCost c = cost::attention_backward(q.shape(), k.shape(), v.shape(), dtype_, mask, acc);
  if (c.kernels.launches > 0)  // a skipped block leaves its gradients as they were
    for (const Tensor* g : {&dq, &dk, &dv}) written(*g);
  record(op, c,
         {q.shape(), k.shape(), v.shape(), o.shape(), d_o.shape(), lse.shape(), dq.shape(), dk.shape(),
          dv.shape()},
         c.bytes() == 0);
}

void TraceDevice::merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk) {
  constexpr const char* op = "merge_attention";
  check_all(op, {{&o, "o"}, {&lse, "lse"}, {&o_blk, "o_blk"}, {&lse_blk, "lse_blk"}});
  if (o.ndim() < 2) fail(op, "o must be at least 2-D, got " + to_string(o.shape()));
  same_shape(op, o, "o", o_blk, "o_blk");
  expect_drop_last(op, lse, "lse", o.shape());
  expect_drop_last(op, lse_blk, "lse_blk", o.shape());
  double rows = 1.0;
  if (const auto it = block_rows_.find(o_blk.storage()->id()); it != block_rows_.end()) {
    rows = it->second;
    block_rows_.erase(it);
  }
  record(op, cost::merge_attention(o.shape(), dtype_, rows),
         {o.shape(), lse.shape(), o_blk.shape(), lse_blk.shape()});
}

// ---- elementwise and layout --------------------------------------------------------------------

void TraceDevice::add(const Tensor& a, const Tensor& b, Tensor& out, double /*alpha*/, double /*beta*/) {
  check_or_accumulator(a, "add", "a");
  check_or_accumulator(b, "add", "b");
  check_or_accumulator(out, "add", "out");
  same_shape("add", a, "a", b, "b");
  same_shape("add", a, "a", out, "out");
  written(out);
  record("add", cost::add(out.shape(), a.dtype(), b.dtype(), out.dtype()), {a.shape(), b.shape(), out.shape()});
}

void TraceDevice::scale(Tensor& x, double /*alpha*/) {
  check(x, "scale", "x");
  written(x);
  record("scale", cost::scale(x.shape(), dtype_), {x.shape()});
}

Tensor TraceDevice::slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len) {
  check(x, "slice", "x");
  const std::size_t d = norm_dim("slice", dim, x.ndim());
  if (start < 0 || len < 0 || start + len > x.shape()[d])
    fail("slice", "start " + std::to_string(start) + " and length " + std::to_string(len) +
                      " out of range for dim " + std::to_string(dim) + " of " + to_string(x.shape()));
  Shape s = x.shape();
  s[d] = len;
  Tensor out = empty(s);
  record("slice", cost::copy(s, dtype_), {x.shape(), s});
  return out;
}

void TraceDevice::slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src, bool accumulate) {
  check(dst, "slice_assign", "dst");
  check(src, "slice_assign", "src");
  const std::size_t d = norm_dim("slice_assign", dim, dst.ndim());
  Shape want = dst.shape();
  want[d] = src.ndim() == dst.ndim() ? src.shape()[d] : -1;
  if (src.shape() != want || start < 0 || start + want[d] > dst.shape()[d])
    fail("slice_assign", "src " + to_string(src.shape()) + " does not fit dst " + to_string(dst.shape()) +
                             " at " + std::to_string(start) + " along dim " + std::to_string(dim));
  written(dst);
  record("slice_assign", cost::slice_assign(src.shape(), dtype_, accumulate), {dst.shape(), src.shape()});
}

Tensor TraceDevice::concat(std::span<const Tensor> parts, int dim) {
  if (parts.empty()) fail("concat", "no parts");
  for (const Tensor& p : parts) check(p, "concat", "part");
  const std::size_t d = norm_dim("concat", dim, parts[0].ndim());
  Shape outside = parts[0].shape();  // the shape with the concatenated extent zeroed
  outside[d] = 0;
  Shape out = outside;
  std::vector<Shape> shapes;
  for (const Tensor& p : parts) {
    Shape s = p.shape();
    if (s.size() == outside.size()) s[d] = 0;
    if (s != outside)
      fail("concat", "part " + to_string(p.shape()) + " does not match " + to_string(parts[0].shape()) +
                         " outside dim " + std::to_string(dim));
    out[d] += p.shape()[d];
    shapes.push_back(p.shape());
  }
  Tensor result = empty(out);
  shapes.push_back(out);
  record("concat", cost::copy(out, dtype_), std::move(shapes));
  return result;
}

Tensor TraceDevice::permute(const Tensor& x, std::span<const int> perm) {
  check(x, "permute", "x");
  std::vector<int> sorted(perm.begin(), perm.end());
  std::ranges::sort(sorted);
  bool ok = static_cast<int>(perm.size()) == x.ndim();
  for (std::size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int>(i);
  if (!ok)
    fail("permute",
         "not a permutation of the " + std::to_string(x.ndim()) + " dims of " + to_string(x.shape()));
  Shape out(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) out[i] = x.shape()[static_cast<std::size_t>(perm[i])];
  Tensor result = empty(out);
  record("permute", cost::copy(out, dtype_), {x.shape(), out});
  return result;
}

// ---- transformer layer ops ---------------------------------------------------------------------

void TraceDevice::linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  check(x, "linear", "x");
  check(w, "linear", "w");
  check(y, "linear", "y");
  if (b.defined()) check(b, "linear", "b");
  if (x.ndim() < 1 || w.ndim() != 2 || x.shape().back() != w.dim(1))
    fail("linear",
         "x " + to_string(x.shape()) + " and w " + to_string(w.shape()) + " do not match (w is [out, in])");
  if (b.defined()) expect_shape("linear", b, "b", {w.dim(0)});
  expect_with_last("linear", y, "y", x.shape(), w.dim(0));
  record("linear", cost::linear(x.shape(), w.shape(), b.defined(), dtype_),
         {x.shape(), w.shape(), b.defined() ? b.shape() : Shape{}, y.shape()});
}

void TraceDevice::linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                                  Tensor& db, bool accumulate_dx, bool fp32_dw) {
  constexpr const char* op = "linear_backward";
  check(x, op, "x");
  check(w, op, "w");
  check(dy, op, "dy");
  check(dw, op, "dw");
  if (x.ndim() < 1 || w.ndim() != 2 || x.shape().back() != w.dim(1))
    fail(op,
         "x " + to_string(x.shape()) + " and w " + to_string(w.shape()) + " do not match (w is [out, in])");
  expect_with_last(op, dy, "dy", x.shape(), w.dim(0));
  expect_shape(op, dw, "dw", w.shape());
  if (dx.defined()) {
    check(dx, op, "dx");
    expect_shape(op, dx, "dx", x.shape());
  }
  if (db.defined()) {
    check(db, op, "db");
    expect_shape(op, db, "db", {w.dim(0)});
  }
  record(op, cost::linear_backward(x.shape(), w.shape(), dx.defined(), db.defined(), accumulate_dx, dtype_, fp32_dw),
         {x.shape(), w.shape(), dy.shape(), dx.defined() ? dx.shape() : Shape{}, dw.shape(),
          db.defined() ? db.shape() : Shape{}});
}

namespace {
// gamma/beta are [cols]; mean/rstd hold one value per row (numel = numel(x) / cols).
void check_norm_params(std::string_view op, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                       const Tensor& rstd) {
  if (x.ndim() < 1) fail(op, "x must be at least 1-D");
  const std::int64_t cols = x.shape().back();
  expect_shape(op, gamma, "gamma", {cols});
  const std::int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  for (const Tensor* t : {&mean, &rstd})
    if (t->numel() != rows)
      fail(op, "mean/rstd " + to_string(t->shape()) + " must hold one value per row of x " +
                   to_string(x.shape()));
}
}  // namespace

void TraceDevice::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double /*eps*/,
                             Tensor& y, Tensor& mean, Tensor& rstd) {
  constexpr const char* op = "layer_norm";
  check_all(op, {{&x, "x"}, {&gamma, "gamma"}, {&beta, "beta"}, {&y, "y"}, {&mean, "mean"}, {&rstd, "rstd"}});
  check_norm_params(op, x, gamma, mean, rstd);
  expect_shape(op, beta, "beta", gamma.shape());
  same_shape(op, x, "x", y, "y");
  record(op, cost::layer_norm(x.shape(), dtype_),
         {x.shape(), gamma.shape(), beta.shape(), y.shape(), mean.shape(), rstd.shape()});
}

void TraceDevice::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                                      Tensor& dbeta, bool accumulate_dx) {
  constexpr const char* op = "layer_norm_backward";
  check_all(op, {{&x, "x"},
                 {&gamma, "gamma"},
                 {&mean, "mean"},
                 {&rstd, "rstd"},
                 {&dy, "dy"},
                 {&dx, "dx"},
                 {&dgamma, "dgamma"},
                 {&dbeta, "dbeta"}});
  check_norm_params(op, x, gamma, mean, rstd);
  expect_shape(op, dbeta, "dbeta", gamma.shape());
  expect_shape(op, dgamma, "dgamma", gamma.shape());
  same_shape(op, x, "x", dy, "dy");
  same_shape(op, x, "x", dx, "dx");
  record(op, cost::layer_norm_backward(x.shape(), dtype_, accumulate_dx),
         {x.shape(), gamma.shape(), mean.shape(), rstd.shape(), dy.shape(), dx.shape(), dgamma.shape(),
          dbeta.shape()});
}

void TraceDevice::dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p,
                          std::uint64_t /*seed*/) {
  check(x, "dropout", "x");
  check(y, "dropout", "y");
  check(mask, "dropout", "mask");
  same_shape("dropout", x, "x", y, "y");
  check_dropout("dropout", p, mask, x.numel());
  if (residual.defined()) {
    check(residual, "dropout", "residual");
    same_shape("dropout", x, "x", residual, "residual");
  }
  record("dropout", cost::dropout(x.shape(), dtype_, residual.defined()), {x.shape(), y.shape()});
}

void TraceDevice::dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p) {
  check(dy, "dropout_backward", "dy");
  check(dx, "dropout_backward", "dx");
  check(mask, "dropout_backward", "mask");
  same_shape("dropout_backward", dy, "dy", dx, "dx");
  check_dropout("dropout_backward", p, mask, dy.numel());
  record("dropout_backward", cost::dropout_backward(dy.shape(), dtype_), {dy.shape(), dx.shape()});
}

void TraceDevice::gelu(const Tensor& x, Tensor& y) {
  check(x, "gelu", "x");
  check(y, "gelu", "y");
  same_shape("gelu", x, "x", y, "y");
  record("gelu", cost::gelu(x.shape(), dtype_), {x.shape(), y.shape()});
}

void TraceDevice::gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  check(x, "gelu_backward", "x");
  check(dy, "gelu_backward", "dy");
  check(dx, "gelu_backward", "dx");
  same_shape("gelu_backward", x, "x", dy, "dy");
  same_shape("gelu_backward", x, "x", dx, "dx");
  record("gelu_backward", cost::gelu_backward(x.shape(), dtype_), {x.shape(), dy.shape(), dx.shape()});
}

void TraceDevice::swiglu(const Tensor& gate, const Tensor& up, Tensor& y) {
  constexpr const char* op = "swiglu";
  check(gate, op, "gate");
  check(up, op, "up");
  check(y, op, "y");
  same_shape(op, gate, "gate", up, "up");
  same_shape(op, gate, "gate", y, "y");
  record(op, cost::swiglu(gate.shape(), dtype_), {gate.shape(), up.shape(), y.shape()});
}

void TraceDevice::swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                                  Tensor& dup) {
  constexpr const char* op = "swiglu_backward";
  check(gate, op, "gate");
  check(up, op, "up");
  check(dy, op, "dy");
  check(dgate, op, "dgate");
  check(dup, op, "dup");
  for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{&up, "up"}, {&dy, "dy"}, {&dgate, "dgate"},
                                {&dup, "dup"}})
    same_shape(op, gate, "gate", *t, name);
  record(op, cost::swiglu_backward(gate.shape(), dtype_),
         {gate.shape(), up.shape(), dy.shape(), dgate.shape(), dup.shape()});
}

// ---- annotations -------------------------------------------------------------------------------

void TraceDevice::begin_phase(std::string_view name) {
  recorder_.add(PhaseBegin{recorder_.name(name)});
}
void TraceDevice::end_phase(std::string_view name) {
  recorder_.add(PhaseEnd{recorder_.name(name)});
}

}  // namespace spsim::rt::trace
