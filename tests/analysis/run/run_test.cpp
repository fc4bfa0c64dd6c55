// The run's pieces that need no MPI: statistics, per-phase rows, backend selection, the timing and
// host-staging communicator decorators (on the threads backend), and the run config.
#include "analysis/run/run.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "analysis/run/backend.hpp"
#include "runtime/core/error.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/host_staged_comm.hpp"
#include "runtime/threads/threads_comm.hpp"
#include "runtime/timed_comm.hpp"

using namespace spsim::analysis;
namespace rt = spsim::rt;

TEST_CASE("spread_of: median (mean of the middle two for an even count), min, max") {
  const auto odd = spread_of({3, 1, 2});
  CHECK(odd.median == 2);
  CHECK(odd.min == 1);
  CHECK(odd.max == 3);
  CHECK(spread_of({4, 1, 3, 2}).median == 2.5);
  CHECK(spread_of({}).median == 0);
}

TEST_CASE("phase_rows: each iteration counts its slowest rank; the slowest rank has the largest median") {
  RunMeasurement m;
  m.ranks = 2;
  auto it = [](double f, double b, double cf, double cb) {
    RankIteration r{f, b, cf, cb, {}, {}};
    r.op_s[static_cast<std::size_t>(rt::OpClass::gemm)] = f + b - cf - cb;
    r.comm_s[static_cast<std::size_t>(rt::CommKind::sendrecv)] = cf + cb;
    return r;
  };
  // Iteration i: rank 0 forward 1, 5, 3; rank 1 forward 2, 2, 2 -> per-iteration max 2, 5, 3.
  m.samples = {{it(1, 10, 0.5, 1), it(2, 12, 0.25, 2)},
               {it(5, 10, 0.5, 1), it(2, 12, 0.25, 2)},
               {it(3, 10, 0.5, 1), it(2, 12, 0.25, 2)}};
  m.per_iteration[static_cast<std::size_t>(rt::CommKind::sendrecv)] = {4, 1024, 0};
  m.ops_per_iteration[static_cast<std::size_t>(rt::OpClass::gemm)] = {10, 0};
  auto rows = phase_rows(m);
  REQUIRE(rows.size() == 7);  // forward, backward, step, compute, gemm, communication, sendrecv
  CHECK(rows[4].key == "op:gemm");
  CHECK(rows[4].calls == 10);
  CHECK(rows[4].spread.median == doctest::Approx(11.75));  // all compute is gemm here
  rows.erase(rows.begin() + 4);
  CHECK(rows[0].spread.median == 3);  // of {2, 5, 3}
  CHECK(rows[0].spread.min == 2);
  CHECK(rows[0].spread.max == 5);
  CHECK(rows[0].slowest_rank == 0);  // medians: rank 0 3, rank 1 2
  CHECK(rows[1].spread.median == 12);
  CHECK(rows[1].slowest_rank == 1);
  CHECK(rows[2].spread.median == 14);  // step per iteration: max(11, 14), max(15, 14), max(13, 14)
  CHECK(rows[2].spread.max == 15);
  // compute = step - blocked: rank 0 11-1.5, 15-1.5, 13-1.5; rank 1 14-2.25 -> max 11.75, 13.5, 11.75.
  CHECK(rows[3].spread.median == doctest::Approx(11.75));
  CHECK(rows[4].spread.median == doctest::Approx(2.25));
  CHECK(rows[5].name == "  sendrecv");
  CHECK(rows[5].calls == 4);
  CHECK(rows[5].bytes == 1024);
}

TEST_CASE("resolve_backend: mpi = cpu + mpi, nccl = cuda + nccl, overrides and bad names") {
  const auto d = resolve_backend("", "", "");
  CHECK(d.device == "cpu");
  CHECK(d.comm == "mpi");
  const auto m = resolve_backend("mpi", "", "");
  CHECK(m.device == "cpu");
  auto where = [](const std::string& b, const std::string& dev, const std::string& comm) -> std::string {
    try {
      (void)resolve_backend(b, dev, comm);
    } catch (const spsim::InputError& e) {
      return e.where();
    }
    return "";
  };
  CHECK(where("gloo", "", "") == "--backend");
  CHECK(where("", "tpu", "") == "--device");
  CHECK(where("", "", "ucx") == "--comm");
  CHECK(where("", "cpu", "nccl") == "--comm");
  if (built_with_cuda()) {
    const auto n = resolve_backend("nccl", "", "");
    CHECK(n.device == "cuda");
    CHECK(n.comm == "nccl");
  } else {
    CHECK(where("nccl", "", "") == "--device");  // cuda is not in this build
  }
}

TEST_CASE("rt::TimedComm counts calls and bytes per kind and passes results through") {
  std::mutex mu;
  std::vector<rt::CommStats> stats(3);
  rt::run_ranks(3, [&](rt::Comm& inner) {
    rt::CpuDevice dev(rt::DType::f64);
    rt::TimedComm comm(inner);
    rt::Tensor x = dev.from_host(std::vector<double>(6, inner.rank() + 1.0), {6});
    comm.all_reduce(x).wait();
    // Sum over ranks of (rank + 1) = 1 + 2 + 3 = 6 in every element.
    for (double v : dev.to_host(x)) CHECK(v == 6);
    rt::Tensor mine = dev.empty({2});
    comm.reduce_scatter(x, mine).wait();  // chunk of 6 + 6 + 6
    for (double v : dev.to_host(mine)) CHECK(v == 18);
    rt::Tensor out = dev.from_host(std::vector<double>(4, inner.rank()), {4}), in = dev.empty({4});
    comm.ring_exchange(out, in).wait();
    for (double v : dev.to_host(in)) CHECK(v == (inner.rank() + 2) % 3);  // from rank - 1
    auto sub = comm.split({0, 0, 1});
    rt::Tensor y = dev.from_host(std::vector<double>(2, 1.0), {2});
    sub->all_reduce(y).wait();  // counted in the parent's statistics
    std::lock_guard lock(mu);
    stats[static_cast<std::size_t>(inner.rank())] = comm.stats();
  });
  for (const auto& s : stats) {
    const auto& ar = s[static_cast<std::size_t>(rt::CommKind::all_reduce)];
    CHECK(ar.calls == 2);
    CHECK(ar.bytes == 6 * 8 + 2 * 8);
    CHECK(ar.blocked_s >= 0);
    CHECK(s[static_cast<std::size_t>(rt::CommKind::reduce_scatter)].bytes == 48);
    CHECK(s[static_cast<std::size_t>(rt::CommKind::sendrecv)].calls == 1);
    CHECK(s[static_cast<std::size_t>(rt::CommKind::sendrecv)].bytes == 32);
    CHECK(s[static_cast<std::size_t>(rt::CommKind::all_gather)].calls == 0);
  }
}

TEST_CASE("rt::TimedComm with sync_collectives: the wait for a late rank moves to the barrier row") {
  // Rank 0 arrives 200 ms late at an all-reduce. Without sync the others block in the all-reduce for
  // those 200 ms; with sync they block in the barrier before it, and the all-reduce itself is quick.
  // Point-to-point calls get no barrier.
  using namespace std::chrono_literals;
  constexpr double kLate = 0.2;
  for (bool sync : {false, true}) {
    CAPTURE(sync);
    std::mutex mu;
    std::vector<rt::CommStats> stats(3);
    rt::run_ranks(3, [&](rt::Comm& inner) {
      rt::CpuDevice dev(rt::DType::f64);
      rt::TimedComm comm(inner, sync);
      rt::Tensor x = dev.from_host(std::vector<double>(4, 1.0), {4});
      if (inner.rank() == 0) std::this_thread::sleep_for(200ms);
      comm.all_reduce(x).wait();
      rt::Tensor in = dev.empty({4});
      comm.ring_exchange(x, in).wait();
      std::lock_guard lock(mu);
      stats[static_cast<std::size_t>(inner.rank())] = comm.stats();
    });
    for (int r = 1; r < 3; ++r) {
      CAPTURE(r);
      const auto& s = stats[static_cast<std::size_t>(r)];
      const auto& ar = s[static_cast<std::size_t>(rt::CommKind::all_reduce)];
      const auto& wait = s[static_cast<std::size_t>(rt::CommKind::barrier)];
      CHECK(wait.calls == (sync ? 1 : 0));
      if (sync) {
        CHECK(wait.blocked_s > 0.9 * kLate);
        CHECK(ar.blocked_s < 0.5 * kLate);
      } else {
        CHECK(ar.blocked_s > 0.9 * kLate);
      }
    }
  }
}

TEST_CASE("rt::HostStagedComm gives the results of the communicator it stages through") {
  rt::run_ranks(4, [&](rt::Comm& inner) {
    rt::CpuDevice dev(rt::DType::f32);
    rt::HostStagedComm comm(inner, dev);
    const double r = inner.rank();
    rt::Tensor x = dev.from_host(std::vector<double>{r, 2 * r}, {2});
    comm.all_reduce(x).wait();
    // Σ r over 0..3 = 6.
    CHECK(dev.to_host(x) == std::vector<double>{6, 12});
    rt::Tensor all = dev.empty({8});
    comm.all_gather(x, all).wait();
    CHECK(dev.to_host(all) == std::vector<double>{6, 12, 6, 12, 6, 12, 6, 12});
    rt::Tensor chunks = dev.from_host(std::vector<double>{r, r, r, r}, {4}), got = dev.empty({4});
    comm.all_to_all(chunks, got, 0, 0).wait();  // element j came from rank j
    CHECK(dev.to_host(got) == std::vector<double>{0, 1, 2, 3});
    rt::Tensor in = dev.empty({2});
    comm.ring_exchange(x, in).wait();
    CHECK(dev.to_host(in) == std::vector<double>{6, 12});
    if (inner.rank() == 0) comm.send(dev.from_host(std::vector<double>{7}, {1}), 1, 5).wait();
    if (inner.rank() == 1) {
      rt::Tensor m = dev.empty({1});
      comm.recv(m, 0, 5).wait();
      CHECK(dev.to_host(m) == std::vector<double>{7});
    }
  });
}

TEST_CASE("run_config: the degree is the world size, checked against the strategy") {
  auto cfg = load_config(std::string(SPSIM_SOURCE_DIR) + "/configs/checks/rsa-reduce-scatter.json");
  const auto c = run_config(cfg, 2, rt::DType::f32, std::nullopt);
  CHECK(c.strategy.degree == 2);
  CHECK(c.workload.dtype == rt::DType::f32);
  CHECK(run_dtype(cfg) == rt::DType::f64);  // the config names float64 under "check"
  try {
    (void)run_config(cfg, 5, rt::DType::f32, std::nullopt);  // seq_len 24 is not divisible by 5
    FAIL("expected an InputError");
  } catch (const spsim::InputError& e) {
    CHECK(e.where() == "strategy.degree");
    CHECK(std::string(e.what()).find("5 ranks") != std::string::npos);
  }
  cfg.parallel.dp = 2;  // a run is one SP group; DP replicas exist only in the simulator
  try {
    (void)run_config(cfg, 2, rt::DType::f32, std::nullopt);
    FAIL("expected an InputError");
  } catch (const spsim::InputError& e) {
    CHECK(e.where() == "parallel.dp");
  }
  CHECK_THROWS_AS((void)load_cluster_argument("no-such-preset"), spsim::InputError);
  CHECK_THROWS_AS((void)load_cluster_argument("missing/file.json"), spsim::InputError);
  CHECK(load_cluster_argument("dgx-a100").name == "dgx-a100");
}

TEST_CASE("run_config: the compute slowdown follows the cluster the run is predicted on") {
  // The check config names no cluster: the uncalibrated default. On --cluster dgx-a100 NCCL's 24
  // channels hold 24 of its 108 SMs (24/84); on dgx-h100, which names no channel count, the default
  // again; a slowdown the config gives stays.
  auto cfg = load_config(std::string(SPSIM_SOURCE_DIR) + "/configs/checks/rsa-reduce-scatter.json");
  CHECK(cfg.simulation.compute_slowdown == 0.1);
  auto a100 = run_config(cfg, 2, rt::DType::f32, load_cluster_argument("dgx-a100"));
  CHECK(a100.simulation.compute_slowdown == doctest::Approx(24.0 / 84).epsilon(1e-15));
  a100.cluster = load_cluster_argument("dgx-h100");
  resolve_compute_slowdown(a100);
  CHECK(a100.simulation.compute_slowdown == 0.1);
  CHECK(a100.simulation.compute_slowdown_basis == "default, uncalibrated");
  cfg.simulation.compute_slowdown = 0.5;
  cfg.simulation.compute_slowdown_basis = "simulation.compute_slowdown";
  CHECK(run_config(cfg, 2, rt::DType::f32, load_cluster_argument("dgx-a100")).simulation.compute_slowdown == 0.5);
}
