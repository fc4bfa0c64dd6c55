// calibrate_machine: compute and communication microbenchmarks, their fits, and the cluster JSON.
#include "analysis/calibrate/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "analysis/report/table.hpp"
#include "analysis/run/run.hpp"
#include "runtime/cost.hpp"
#include "sim/collectives/fitted.hpp"

namespace spsim::analysis {

namespace {

using Clock = std::chrono::steady_clock;
using rt::Tensor;
using rt::Trans;

// Sustained time of one call of `op`: the median over `reps` windows of back-to-back calls, each window
// at least `window_s` long (k calls, k from one untimed call), every rank starting together. Windows,
// not single calls, so that the measurement includes this process's share of a shared CPU the way a
// long run does (a call shorter than a scheduler time slice would otherwise run at full speed).
double time_op(rt::Device& dev, rt::Comm& comm, int reps, double window_s, const std::function<void()>& op) {
  comm.barrier();
  auto t0 = Clock::now();
  op();
  dev.synchronize();
  const double first = std::chrono::duration<double>(Clock::now() - t0).count();
  // Every rank must make the same number of calls (collectives): agree on the slowest estimate.
  std::vector<double> est{first};
  Tensor e = dev.from_host(est, {1});
  comm.all_reduce(e).wait();
  const double mean_first = dev.to_host(e)[0] / comm.size();
  const int k = static_cast<int>(std::clamp(std::ceil(window_s / std::max(mean_first, 1e-9)), 1.0, 10000.0));
  std::vector<double> ts;
  for (int i = 0; i < reps; ++i) {
    comm.barrier();
    t0 = Clock::now();
    for (int j = 0; j < k; ++j) op();
    dev.synchronize();
    ts.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / k);
  }
  return spread_of(ts).median;
}

// Per column: the mean over ranks (compute: every rank's own speed) or the max (communication: a
// collective ends when its slowest member does).
std::vector<double> across_ranks(rt::Device& dev, rt::Comm& comm, const std::vector<double>& mine,
                                 bool slowest) {
  const auto n = static_cast<std::int64_t>(mine.size());
  Tensor all = dev.empty({comm.size(), n});
  comm.all_gather(dev.from_host(mine, {1, n}), all, 0).wait();
  const auto h = dev.to_host(all);
  std::vector<double> out(mine.size(), 0.0);
  for (int r = 0; r < comm.size(); ++r)
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = h[static_cast<std::size_t>(r * n + i)];
      auto& o = out[static_cast<std::size_t>(i)];
      o = slowest ? std::max(o, v) : o + v / comm.size();
    }
  return out;
}

Tensor filled(rt::Device& dev, const rt::Shape& shape, double value) {
  Tensor t = dev.empty(shape);
  dev.fill(t, value);
  return t;
}

// A benchmark under construction: (x, op) pairs, timed on every rank and combined.
class Suite {
 public:
  Suite(rt::Device& dev, rt::Comm& comm, int reps, double window_s)
      : dev_(dev), comm_(comm), reps_(reps), window_s_(window_s) {}

  void add(double x, const std::function<void()>& op) {
    xs_.push_back(x), ts_.push_back(time_op(dev_, comm_, reps_, window_s_, op));
  }

  // slowest: communication (the slowest rank's time; fit_line_robust, relative weights, sizes over
  // decades); else compute (the mean over ranks; fit_rate, so the large operations decide the rate,
  // and the intercept of a relative fit_line kept as the call overhead).
  Benchmark finish(std::string name, std::string unit, bool slowest) {
    const auto t = across_ranks(dev_, comm_, ts_, slowest);
    Benchmark b{std::move(name), std::move(unit), {}, {}, 0, 0};
    for (std::size_t i = 0; i < xs_.size(); ++i) b.points.push_back({xs_[i], t[i]});
    const std::string where = "calibrate " + b.name;
    if (slowest) {
      const auto robust = fit_line_robust(xs_, t, where);
      b.fit = robust.fit;
      b.dropped = robust.dropped;
    } else {
      b.fit = fit_rate(xs_, t, where);
      b.overhead_s = fit_line_robust(xs_, t, where).fit.alpha;
    }
    xs_.clear(), ts_.clear();
    if (!(b.fit.beta > 0)) {  // noise swamped the growth: the largest point's rate
      const auto& last = *std::max_element(b.points.begin(), b.points.end(),
                                           [](const auto& a, const auto& c) { return a.x < c.x; });
      b.fit.beta = last.t / last.x;
      b.fit.alpha = 0;
    }
    xs_.clear(), ts_.clear();
    return b;
  }

 private:
  rt::Device& dev_;
  rt::Comm& comm_;
  int reps_;
  double window_s_;
  std::vector<double> xs_, ts_;
};

struct GemmShape {
  std::int64_t batch, m, n, k;
  Trans ta, tb;
};

Benchmark bench_gemm(rt::Device& dev, Suite& s, bool quick) {
  // Small square shapes, and the attention shapes that dominate (a head dimension of 64 as the inner or
  // outer dimension, transposed operands as in QKᵀ and the key-side gradients) up to sizes whose
  // operands leave the caches by far. No large square GEMM: the strategies have none, and on a CPU it runs
  // far faster than the head-dimension-thin ones, so it would set a rate no strategy reaches.
  std::vector<GemmShape> shapes = {{1, 128, 128, 128, Trans::N, Trans::N},
                                   {1, 256, 256, 256, Trans::N, Trans::N},
                                   {1, 512, 512, 512, Trans::N, Trans::N},
                                   {1, 512, 512, 64, Trans::N, Trans::T},
                                   {4, 256, 256, 64, Trans::N, Trans::T},
                                   {1, 1024, 64, 1024, Trans::N, Trans::N},
                                   {1, 1024, 1024, 64, Trans::N, Trans::T},
                                   {1, 1024, 64, 1024, Trans::T, Trans::N},
                                   {2, 2048, 2048, 64, Trans::N, Trans::T},
                                   {2, 2048, 64, 2048, Trans::N, Trans::N},
                                   {2, 2048, 64, 2048, Trans::T, Trans::N},
                                   // Blocks of a 4096-token chunk (s = 8192 at P = 2): QKᵀ, PV, and the
                                   // key-side gradient over the full rows. Their outputs and operands are
                                   // tens of MB, far out of cache: the rate the long sequences run at.
                                   {2, 4096, 4096, 64, Trans::N, Trans::T},
                                   {2, 4096, 64, 4096, Trans::N, Trans::N},
                                   {2, 8192, 64, 4096, Trans::T, Trans::N}};
  if (quick) shapes.resize(4);
  for (const auto& g : shapes) {
    const rt::Shape as = g.ta == Trans::N ? rt::Shape{g.batch, g.m, g.k} : rt::Shape{g.batch, g.k, g.m};
    const rt::Shape bs = g.tb == Trans::N ? rt::Shape{g.batch, g.k, g.n} : rt::Shape{g.batch, g.n, g.k};
    Tensor a = filled(dev, as, 0.5), b = filled(dev, bs, 0.25), c = dev.empty({g.batch, g.m, g.n});
    const double flops = rt::cost::gemm(as, bs, c.shape(), g.ta, g.tb, dev.dtype(), false).flops;
    s.add(flops, [&] { dev.gemm(a, b, c, g.ta, g.tb); });
  }
  return s.finish("gemm", "FLOP", false);
}

std::vector<std::int64_t> stream_sizes(bool quick) {
  return quick ? std::vector<std::int64_t>{1 << 12, 1 << 14, 1 << 16}
               : std::vector<std::int64_t>{1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24};
}

Benchmark bench_copy(rt::Device& dev, Suite& s, bool quick) {
  for (std::int64_t n : stream_sizes(quick)) {
    Tensor a = filled(dev, {n}, 1.0), b = dev.empty({n});
    s.add(static_cast<double>(rt::cost::copy({n}, dev.dtype()).bytes()), [&] { dev.copy(a, b); });
  }
  return s.finish("copy", "B", false);
}

Benchmark bench_elementwise(rt::Device& dev, Suite& s, bool quick) {
  for (std::int64_t n : stream_sizes(quick)) {
    Tensor a = filled(dev, {n}, 1.0), b = filled(dev, {n}, 2.0), c = dev.empty({n});
    s.add(static_cast<double>(rt::cost::add({n}, dev.dtype()).bytes()), [&] { dev.add(a, b, c); });
  }
  return s.finish("elementwise", "B", false);
}

Benchmark bench_softmax(rt::Device& dev, Suite& s, bool quick) {
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {256, 1024}, {512, 2048}, {1024, 4096}, {2048, 8192}};
  if (quick) shapes.resize(2);
  for (const auto& [r, c] : shapes) {
    const rt::Shape sh{1, r, c};
    Tensor x = filled(dev, sh, 0.1), y = dev.empty(sh), dy = filled(dev, sh, 0.2), dx = dev.empty(sh);
    s.add(static_cast<double>(rt::cost::softmax(sh, dev.dtype()).bytes()),
          [&] { dev.softmax(x, y, 1.0, rt::Mask{}); });
    s.add(static_cast<double>(rt::cost::softmax_backward(sh, dev.dtype()).bytes()),
          [&] { dev.softmax_backward(y, dy, dx, 1.0); });
  }
  return s.finish("softmax", "B", false);
}

Benchmark bench_attention(rt::Device& dev, Suite& s, bool quick, bool backward) {
  std::vector<std::int64_t> lengths = {128, 256, 512, 1024};
  if (quick) lengths.resize(2);
  const std::int64_t d = 64;
  for (std::int64_t len : lengths) {
    const rt::Shape sh{1, len, d};
    Tensor q = filled(dev, sh, 0.1), k = filled(dev, sh, 0.2), v = filled(dev, sh, 0.3), o = dev.empty(sh),
           lse = dev.empty({1, len}), dq = filled(dev, sh, 0), dk = filled(dev, sh, 0),
           dv = filled(dev, sh, 0), d_o = filled(dev, sh, 0.1);
    const double scale = 0.125;
    dev.attention_block_forward(q, k, v, o, lse, scale, rt::Mask{});
    if (backward)
      s.add(rt::cost::attention_backward(sh, sh, sh, dev.dtype(), rt::Mask{}).flops,
            [&] { dev.attention_block_backward(q, k, v, o, d_o, lse, dq, dk, dv, scale, rt::Mask{}); });
    else
      s.add(rt::cost::attention_forward(sh, sh, sh, dev.dtype(), rt::Mask{}).flops,
            [&] { dev.attention_block_forward(q, k, v, o, lse, scale, rt::Mask{}); });
  }
  return s.finish(backward ? "attention_backward" : "attention_forward", "FLOP", false);
}

// Message sizes in elements: powers of 4 bytes from 16 B, rounded up to a multiple of P.
std::vector<std::int64_t> message_elements(const rt::Device& dev, int p, bool quick) {
  std::vector<std::int64_t> out;
  const auto elt = static_cast<std::int64_t>(rt::dtype_bytes(dev.dtype()));
  for (std::int64_t bytes = 16; bytes <= (quick ? (1 << 16) : (1 << 24)); bytes *= 4) {
    const std::int64_t n = std::max<std::int64_t>(1, bytes / elt);
    out.push_back((n + p - 1) / p * p);
  }
  return out;
}

Benchmark bench_comm(rt::Device& dev, rt::Comm& comm, Suite& s, bool quick, const std::string& kind) {
  const int p = comm.size();
  const auto elt = static_cast<double>(rt::dtype_bytes(dev.dtype()));
  for (std::int64_t n : message_elements(dev, p, quick)) {
    Tensor full = filled(dev, {n}, 1.0), other = dev.empty({n}), part = filled(dev, {n / p}, 1.0);
    const double bytes = static_cast<double>(n) * elt;
    std::function<void()> op;
    if (kind == "p2p")
      op = [&] { comm.ring_exchange(full, other).wait(); };
    else if (kind == "all_reduce")
      op = [&] { comm.all_reduce(full).wait(); };
    else if (kind == "reduce_scatter")
      op = [&] { comm.reduce_scatter(full, part).wait(); };
    else if (kind == "all_gather")
      op = [&] { comm.all_gather(part, full).wait(); };
    else
      op = [&] { comm.all_to_all(full, other, 0, 0).wait(); };
    const auto parsed = rt::parse_collective_op(kind);
    s.add(parsed ? bytes * rt::bus_bandwidth_factor(*parsed, p) : bytes, op);
  }
  return s.finish(kind, "B", true);
}

double rate_of(const Benchmark& b) {
  return 1.0 / b.fit.beta;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

Calibration calibrate_machine(rt::Device& dev, rt::Comm& comm, const CalibrateOptions& o) {
  Calibration c;
  c.ranks = comm.size();
  c.dtype = dev.dtype();
  c.host = host_name();
  Suite s(dev, comm, o.reps, o.window_s);
  c.compute = {bench_gemm(dev, s, o.quick),
               bench_copy(dev, s, o.quick),
               bench_elementwise(dev, s, o.quick),
               bench_softmax(dev, s, o.quick),
               bench_attention(dev, s, o.quick, false),
               bench_attention(dev, s, o.quick, true)};
  if (comm.size() > 1) {
    c.p2p = bench_comm(dev, comm, s, o.quick, "p2p");
    for (const char* kind : {"all_reduce", "reduce_scatter", "all_gather", "all_to_all"})
      c.collectives.push_back(bench_comm(dev, comm, s, o.quick, kind));
  }
  // Derived parameters (see the header).
  c.peak_flops = rate_of(c.compute[0]);
  c.memory_Bps = rate_of(c.compute[1]);
  auto eff = [&](rt::OpClass k, double v) { c.efficiency[static_cast<std::size_t>(k)] = v; };
  eff(rt::OpClass::gemm, 1.0);
  eff(rt::OpClass::copy, 1.0);
  eff(rt::OpClass::elementwise, rate_of(c.compute[2]) / c.memory_Bps);
  eff(rt::OpClass::softmax, rate_of(c.compute[3]) / c.memory_Bps);
  eff(rt::OpClass::attention_forward, rate_of(c.compute[4]) / c.peak_flops);
  eff(rt::OpClass::attention_backward, rate_of(c.compute[5]) / c.peak_flops);
  std::vector<double> intercepts;
  for (const auto& b : c.compute) intercepts.push_back(b.overhead_s);
  c.launch_overhead_s = spread_of(intercepts).median;
  if (comm.size() > 1) {
    c.link_latency_s = c.p2p.fit.alpha / 2;
    c.link_Bps = rate_of(c.p2p);
  }
  return c;
}

namespace {

nlohmann::ordered_json cluster_json(const Calibration& c) {
  using J = nlohmann::ordered_json;
  const std::string dtype(rt::dtype_name(c.dtype));
  const double peak_t = c.peak_flops / 1e12;
  J gpu;
  gpu["name"] = "cpu-" + c.host;
  gpu["description"] = "one rank (process) of " + c.host + ", calibrated by spsim calibrate in " + dtype;
  gpu["peak_tflops"] = {
      {"bf16", peak_t}, {"fp16", peak_t}, {"tf32", peak_t}, {"fp32", peak_t}, {"fp64", peak_t}};
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  gpu["hbm_bytes"] =
      pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) / c.ranks : 1e9;
  gpu["hbm_GBps"] = c.memory_Bps / 1e9;
  J eff = J::object();
  for (int k = 0; k < 6; ++k)
    eff[std::string(rt::op_class_name(static_cast<rt::OpClass>(k)))] =
        c.efficiency[static_cast<std::size_t>(k)];
  gpu["efficiency"] = eff;
  gpu["launch_overhead_us"] = c.launch_overhead_s * 1e6;
  gpu["source"] = "spsim calibrate on " + c.host + " with " + std::to_string(c.ranks) + " ranks in " + dtype +
                  ": peak = fitted GEMM rate, memory bandwidth = fitted copy rate (every dtype gets the " +
                  dtype + " figures); see the calibration table for each fit's residual";
  J out;
  out["description"] =
      "CPU cluster: " + std::to_string(c.ranks) + " MPI ranks on " + c.host + " (spsim calibrate)";
  out["gpu"] = gpu;
  out["gpus_per_node"] = c.ranks;
  out["nodes"] = 1;
  if (c.ranks > 1) {
    out["intra_node"] = {{"fabric", "pcie"},
                         {"link", "pcie-gen4"},
                         {"bandwidth_GBps", c.link_Bps / 1e9},
                         {"efficiency", 1.0},
                         {"latency_us", c.link_latency_s * 1e6}};
  } else {
    out["intra_node"] = {{"fabric", "pcie"}, {"link", "pcie-gen4"}};
  }
  J zero = {{"base_latency_us", 0},
            {"tree_base_latency_us", 0},
            {"nvlink_step_latency_us", 0},
            {"pcie_step_latency_us", 0},
            {"network_step_latency_us", 0}};
  out["tuning"] = {{"simple", zero},
                   {"ll", zero},
                   {"ll128", zero},
                   {"source",
                    "MPI on shared memory: NCCL's protocol latencies do not apply; the link latency holds "
                    "the measured point-to-point latency"}};
  J fits = J::object();
  for (const auto& b : c.collectives)
    fits[b.name] = {{"latency_us", b.fit.alpha * 1e6},
                    {"busbw_GBps", 1e-9 / std::max(b.fit.beta, 1e-300)},
                    {"ranks", c.ranks},
                    {"source", "spsim calibrate (MPI) on " + c.host},
                    {"residual", b.fit.residual}};
  if (!fits.empty()) out["collective_fits"] = fits;
  return out;
}

nlohmann::ordered_json benchmarks_json(const Calibration& c) {
  auto one = [](const Benchmark& b) {
    nlohmann::ordered_json pts = nlohmann::ordered_json::array();
    for (const auto& m : b.points) pts.push_back({m.x, m.t});
    return nlohmann::ordered_json{{"name", b.name},
                                  {"x_unit", b.x_unit},
                                  {"points", pts},
                                  {"intercept_s", b.fit.alpha + b.overhead_s},
                                  {"rate", b.fit.beta > 0 ? 1.0 / b.fit.beta : 0.0},
                                  {"residual", b.fit.residual},
                                  {"dropped", b.dropped}};
  };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& b : c.compute) out.push_back(one(b));
  if (c.ranks > 1) out.push_back(one(c.p2p));
  for (const auto& b : c.collectives) out.push_back(one(b));
  return out;
}

}  // namespace

std::string calibration_cluster_text(const Calibration& c) {
  return cluster_json(c).dump(2) + "\n";
}

std::string calibration_json(const Calibration& c) {
  return nlohmann::ordered_json{{"schema_version", 1},
                                {"command", "calibrate"},
                                {"cluster", cluster_json(c)},
                                {"benchmarks", benchmarks_json(c)}}
             .dump(2) +
         "\n";
}

std::string render_calibration(const Calibration& c) {
  Table t({{"benchmark", Align::left},
           {"points (dropped)", Align::right},
           {"intercept", Align::right},
           {"rate", Align::right},
           {"residual (rms rel.)", Align::right}});
  auto add = [&](const Benchmark& b, const std::string& label) {
    const double rate = b.fit.beta > 0 ? 1.0 / b.fit.beta : 0;
    const std::string r =
        b.x_unit == "FLOP" ? format_fixed(rate / 1e9, 2) + " GFLOP/s" : format_fixed(rate / 1e9, 3) + " GB/s";
    t.add_row({label,
               std::to_string(b.points.size()) + (b.dropped ? " (" + std::to_string(b.dropped) + ")" : ""),
               format_seconds(b.fit.alpha + b.overhead_s), r, format_fixed(b.fit.residual, 3)});
  };
  for (const auto& b : c.compute) add(b, b.name);
  if (c.ranks > 1) add(c.p2p, "p2p (ring sendrecv)");
  for (const auto& b : c.collectives) add(b, b.name + " (bus bytes)");
  std::string out = "spsim calibrate: " + std::to_string(c.ranks) + " ranks on " + c.host + ", " +
                    std::string(rt::dtype_name(c.dtype)) +
                    "\nfits t = intercept + x / rate (x = FLOPs or bytes)\n\n" + t.to_text() + "\n";
  out += "peak " + format_fixed(c.peak_flops / 1e9, 2) + " GFLOP/s, memory " +
         format_fixed(c.memory_Bps / 1e9, 2) + " GB/s, launch overhead " +
         format_seconds(c.launch_overhead_s);
  if (c.ranks > 1)
    out += ", link " + format_fixed(c.link_Bps / 1e9, 3) + " GB/s with " + format_seconds(c.link_latency_s) +
           " per hop";
  return out + "\n";
}

}  // namespace spsim::analysis
