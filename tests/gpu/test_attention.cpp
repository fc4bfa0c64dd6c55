// CudaDevice attention pieces against the loop references: masked softmax and its backward, the
// attention block forward (o, lse) and backward (GQA sums, accumulation), and the online-softmax merge.
#ifdef SPSIM_WITH_CUDA
#include <doctest/doctest.h>

#include <limits>

#include "runtime/cuda/cuda_device.hpp"
#include "tests/gpu/fixture.hpp"
#include "tests/gpu/reference.hpp"

namespace spsim::gpu_test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Zigzag-like global positions: row 0 sits at position 0 and the keys start at 1, so row 0 is fully
// masked under causal (no key at or before it) while the other rows see a varying number of keys.
MaskRef causal_mask() {
  return {true, {0, 5, 2, 9}, {3, 4, 1, 8, 6}};
}

// The device's mask for `m`, holding its positions (used within one full expression).
struct DeviceMask {
  bool causal = false;
  rt::Positions rows, cols;
  operator rt::Mask() const { return causal ? rt::Mask{true, &rows, &cols} : rt::Mask{}; }  // NOLINT
};
DeviceMask device_mask(const MaskRef& m) {
  return {m.causal, rt::Positions(m.rows), rt::Positions(m.cols)};
}

TEST_CASE("softmax: masked rows, fully masked row gives zeros, and its backward") {
  for (const auto& dc : exact_dtypes())
    for (const MaskRef& m : {MaskRef{}, causal_mask()}) {
      CAPTURE(rt::dtype_name(dc.dtype));
      CAPTURE(m.causal);
      rt::CudaDevice dev(dc.dtype, 0);
      const I64 b = 3, r = 4, c = 5;
      const double scale = 0.7;
      const Vec x = random_vec(static_cast<std::size_t>(b * r * c), 1, -3, 3);
      Vec y_ref;
      softmax_ref(x, b, r, c, scale, m, y_ref);
      rt::Tensor tx = dev.from_host(x, {b, r, c}), ty = dev.empty({b, r, c});
      dev.softmax(tx, ty, scale, device_mask(m));
      check_close(dev.to_host(ty), y_ref, dc.tol);

      // dx = scale y ⊙ (dy − rowsum(dy ⊙ y)) (device.hpp).
      const Vec dy = random_vec(y_ref.size(), 2);
      Vec dx_ref(y_ref.size());
      for (I64 row = 0; row < b * r; ++row) {
        double dot = 0;
        for (I64 k = 0; k < c; ++k)
          dot += dy[static_cast<std::size_t>(row * c + k)] * y_ref[static_cast<std::size_t>(row * c + k)];
        for (I64 k = 0; k < c; ++k) {
          const auto i = static_cast<std::size_t>(row * c + k);
          dx_ref[i] = scale * y_ref[i] * (dy[i] - dot);
        }
      }
      rt::Tensor tdy = dev.from_host(dy, {b, r, c}), tdx = dev.empty({b, r, c});
      dev.softmax_backward(ty, tdy, tdx, scale);
      check_close(dev.to_host(tdx), dx_ref, dc.tol);
    }
}

struct AttnTensors {
  Vec q, k, v;
};
AttnTensors attn_inputs(const AttnCase& a, std::uint64_t seed) {
  return {random_vec(static_cast<std::size_t>(a.bq * a.sq * a.d), seed),
          random_vec(static_cast<std::size_t>(a.bk * a.sk * a.d), seed + 1),
          random_vec(static_cast<std::size_t>(a.bk * a.sk * a.d), seed + 2)};
}

// MHA and GQA (3 query heads per kv head), with and without the causal mask above.
std::vector<AttnCase> attn_cases() {
  std::vector<AttnCase> out;
  for (I64 bk : {6, 2})
    for (const MaskRef& m : {MaskRef{}, causal_mask()}) out.push_back({6, bk, 4, 5, 8, 0.35, m});
  return out;
}

TEST_CASE("attention_block_forward matches softmax(scale q kT) v and its log-sum-exp") {
  for (const auto& dc : exact_dtypes())
    for (const AttnCase& a : attn_cases())
      for (std::size_t workspace :
           {std::size_t{1} << 30, std::size_t{1}}) {  // one chunk; one GQA group per chunk
        CAPTURE(rt::dtype_name(dc.dtype));
        CAPTURE(a.bk);
        CAPTURE(a.mask.causal);
        CAPTURE(workspace);
        rt::CudaDevice dev(dc.dtype, 0);
        dev.set_attention_workspace_bytes(workspace);
        const auto in = attn_inputs(a, 7);
        Vec o_ref, lse_ref;
        attention_forward_ref(a, in.q, in.k, in.v, o_ref, lse_ref);
        rt::Tensor q = dev.from_host(in.q, {a.bq, a.sq, a.d}), k = dev.from_host(in.k, {a.bk, a.sk, a.d}),
                   v = dev.from_host(in.v, {a.bk, a.sk, a.d});
        rt::Tensor o = dev.empty({a.bq, a.sq, a.d}), lse = dev.empty({a.bq, a.sq});
        dev.attention_block_forward(q, k, v, o, lse, a.scale, device_mask(a.mask));
        check_close(dev.to_host(o), o_ref, dc.tol);
        check_close(dev.to_host(lse), lse_ref, dc.tol);
      }
}

TEST_CASE("attention_block_forward of a fully masked block gives o = 0 and lse = -inf") {
  rt::CudaDevice dev(rt::DType::f32, 0);
  const MaskRef m{true, {0, 1}, {5, 6, 7}};  // every key comes after every query
  rt::Tensor q = dev.from_host(random_vec(2 * 2 * 4, 3), {2, 2, 4}),
             k = dev.from_host(random_vec(2 * 3 * 4, 4), {2, 3, 4});
  rt::Tensor v = dev.from_host(random_vec(2 * 3 * 4, 5), {2, 3, 4});
  rt::Tensor o = dev.from_host(Vec(16, 9.0), {2, 2, 4}), lse = dev.empty({2, 2});
  dev.attention_block_forward(q, k, v, o, lse, 1.0, device_mask(m));
  check_close(dev.to_host(o), Vec(16, 0.0), 0);
  check_close(dev.to_host(lse), Vec(4, -kInf), 0);
}

TEST_CASE("attention_block_backward accumulates the device.hpp gradients, summed over GQA groups") {
  for (const auto& dc : exact_dtypes())
    for (const AttnCase& a : attn_cases())
      for (std::size_t workspace : {std::size_t{1} << 30, std::size_t{1}}) {
        CAPTURE(rt::dtype_name(dc.dtype));
        CAPTURE(a.bk);
        CAPTURE(a.mask.causal);
        CAPTURE(workspace);
        rt::CudaDevice dev(dc.dtype, 0);
        dev.set_attention_workspace_bytes(workspace);
        const auto in = attn_inputs(a, 17);
        Vec o_ref, lse_ref;
        attention_forward_ref(a, in.q, in.k, in.v, o_ref, lse_ref);
        const Vec d_o = random_vec(o_ref.size(), 20);
        // Gradients start non-zero to check that the op adds rather than overwrites.
        Vec dq = random_vec(in.q.size(), 21), dk = random_vec(in.k.size(), 22),
            dv = random_vec(in.v.size(), 23);
        rt::Tensor q = dev.from_host(in.q, {a.bq, a.sq, a.d}), k = dev.from_host(in.k, {a.bk, a.sk, a.d}),
                   v = dev.from_host(in.v, {a.bk, a.sk, a.d}), o = dev.from_host(o_ref, {a.bq, a.sq, a.d}),
                   lse = dev.from_host(lse_ref, {a.bq, a.sq}), tdo = dev.from_host(d_o, {a.bq, a.sq, a.d});
        rt::Tensor tdq = dev.from_host(dq, q.shape()), tdk = dev.from_host(dk, k.shape()),
                   tdv = dev.from_host(dv, v.shape());
        dev.attention_block_backward(q, k, v, o, tdo, lse, tdq, tdk, tdv, a.scale, device_mask(a.mask));
        attention_backward_ref(a, in.q, in.k, in.v, o_ref, d_o, lse_ref, dq, dk, dv);
        check_close(dev.to_host(tdq), dq, dc.tol);
        check_close(dev.to_host(tdk), dk, dc.tol);
        check_close(dev.to_host(tdv), dv, dc.tol);
      }
}

TEST_CASE("merge_attention of two key blocks equals attention over all keys") {
  // Splitting the keys into blocks and merging the block results with their lse is exact (online
  // softmax), so merging fwd(k[:2]) and fwd(k[2:]) must reproduce the reference fwd(k). Under the causal
  // mask row 0 (position 0) sees no key in either block (both lse = −inf) and row 2 (position 2) sees
  // only key 2 (position 1): merging in both orders covers a −inf accumulator and a −inf block.
  for (const auto& dc : exact_dtypes())
    for (const MaskRef& m : {MaskRef{}, causal_mask()})
      for (bool second_first : {false, true}) {
        CAPTURE(rt::dtype_name(dc.dtype));
        CAPTURE(m.causal);
        CAPTURE(second_first);
        rt::CudaDevice dev(dc.dtype, 0);
        const AttnCase full{2, 2, 4, 5, 8, 0.5, m};
        const auto in = attn_inputs(full, 31);
        Vec o_ref, lse_ref;
        attention_forward_ref(full, in.q, in.k, in.v, o_ref, lse_ref);
        rt::Tensor q = dev.from_host(in.q, {2, 4, 8}), k = dev.from_host(in.k, {2, 5, 8}),
                   v = dev.from_host(in.v, {2, 5, 8});
        const I64 split = 2;
        const rt::Positions rows(m.rows);
        const rt::Positions c1(std::vector<I64>(m.cols.begin(), m.cols.begin() + (m.causal ? split : 0))),
            c2(std::vector<I64>(m.cols.begin() + (m.causal ? split : 0), m.cols.end()));
        struct Block {
          rt::Tensor k, v;
          rt::Mask mask;
        };
        Block b1{dev.slice(k, 1, 0, split), dev.slice(v, 1, 0, split),
                 m.causal ? rt::Mask{true, &rows, &c1} : rt::Mask{}};
        Block b2{dev.slice(k, 1, split, 5 - split), dev.slice(v, 1, split, 5 - split),
                 m.causal ? rt::Mask{true, &rows, &c2} : rt::Mask{}};
        if (second_first) std::swap(b1, b2);
        rt::Tensor o = dev.empty({2, 4, 8}), lse = dev.empty({2, 4}), ob = dev.empty({2, 4, 8}),
                   lb = dev.empty({2, 4});
        dev.attention_block_forward(q, b1.k, b1.v, o, lse, 0.5, b1.mask);
        dev.attention_block_forward(q, b2.k, b2.v, ob, lb, 0.5, b2.mask);
        dev.merge_attention(o, lse, ob, lb);
        check_close(dev.to_host(o), o_ref, dc.tol);
        check_close(dev.to_host(lse), lse_ref, dc.tol);
      }
}

TEST_CASE("attention in bf16 stays within bf16 rounding of the reference") {
  // Each bf16 value carries a relative error up to 2^-9 ≈ 2e-3; scores, probabilities and outputs are
  // each rounded once more, so a few times that remains.
  rt::CudaDevice dev(rt::DType::bf16, 0);
  const AttnCase a{6, 2, 4, 5, 8, 0.35, causal_mask()};
  const auto in = attn_inputs(a, 41);
  Vec o_ref, lse_ref;
  attention_forward_ref(a, in.q, in.k, in.v, o_ref, lse_ref);
  rt::Tensor q = dev.from_host(in.q, {a.bq, a.sq, a.d}), k = dev.from_host(in.k, {a.bk, a.sk, a.d}),
             v = dev.from_host(in.v, {a.bk, a.sk, a.d});
  rt::Tensor o = dev.empty({a.bq, a.sq, a.d}), lse = dev.empty({a.bq, a.sq});
  dev.attention_block_forward(q, k, v, o, lse, a.scale, device_mask(a.mask));
  check_close(dev.to_host(o), o_ref, 3e-2);
  check_close(dev.to_host(lse), lse_ref, 3e-2);
}

}  // namespace
}  // namespace spsim::gpu_test
#endif
