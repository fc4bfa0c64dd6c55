// The simulator hooks calibration writes to: measured per-collective fits (sim/collectives/fitted.hpp)
// and an inline GPU object, checked through parse_cluster and simulate_collective, and the cluster
// JSON spsim calibrate writes, read back by the simulator.
#include <doctest/doctest.h>

#include "analysis/calibrate/calibrate.hpp"
#include "analysis/config/cluster.hpp"
#include "analysis/config/document.hpp"
#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/collectives.hpp"

using namespace spsim::sim;
using spsim::analysis::parse_cluster;
using json = nlohmann::json;

namespace {

std::string error_where(const json& section) {
  try {
    (void)parse_cluster(section, "cluster");
  } catch (const spsim::InputError& e) {
    return e.where();
  }
  return "";
}

CollectiveCall call_on(const Cluster& c, CommKind kind, int ranks, double bytes, std::string algo = "auto") {
  std::vector<DeviceId> r(c.gpus().begin(), c.gpus().begin() + ranks);
  return CollectiveCall{kind, r, bytes, std::move(algo), std::nullopt, 1};
}

}  // namespace

TEST_CASE("a collective fit replaces the model for auto calls on the measured group size") {
  const json section = {{"preset", "dgx-h100"},
                        {"collective_fits",
                         {{"all_reduce", {{"latency_us", 30.0}, {"busbw_GBps", 200.0}, {"ranks", 8}}},
                          {"all_to_all", {{"latency_us", 12.5}, {"busbw_GBps", 50.0}, {"ranks", 8}}}}}};
  const Cluster cluster(parse_cluster(section, "cluster"));
  const double n = 1 << 30;
  // T = α + n · f(P) / B with f = 2(P-1)/P = 1.75 for all-reduce, (P-1)/P = 0.875 for all-to-all, P = 8.
  const auto ar =
      simulate_collective(cluster, NetworkMode::flow, call_on(cluster, CommKind::all_reduce, 8, n));
  CHECK(ar.algorithm == "fitted");
  CHECK(ar.duration() == Time::from_us(30.0) + Time::from_seconds(n * 1.75 / 200e9));
  for (double sent : ar.bytes_sent) CHECK(sent == doctest::Approx(n * 1.75));
  for (Time t : ar.rank_finish) CHECK(t == ar.finish);
  const auto a2a =
      simulate_collective(cluster, NetworkMode::analytical, call_on(cluster, CommKind::all_to_all, 8, n));
  CHECK(a2a.duration() == Time::from_us(12.5) + Time::from_seconds(n * 0.875 / 50e9));
  // choose() predicts what start() runs.
  Engine engine;
  auto network = make_network(NetworkMode::flow, engine, cluster);
  Collectives coll(*network);
  const auto choice = coll.choose(call_on(cluster, CommKind::all_reduce, 8, n));
  CHECK(choice.algorithm == "fitted");
  CHECK(choice.predicted == ar.duration());
  // Not for 4 ranks (measured on 8), an explicit algorithm, or a kind without a fit.
  CHECK(simulate_collective(cluster, NetworkMode::flow, call_on(cluster, CommKind::all_reduce, 4, n))
            .algorithm != "fitted");
  CHECK(simulate_collective(cluster, NetworkMode::flow, call_on(cluster, CommKind::all_reduce, 8, n, "ring"))
            .algorithm == "ring");
  CHECK(simulate_collective(cluster, NetworkMode::flow, call_on(cluster, CommKind::all_gather, 8, n))
            .algorithm != "fitted");
}

TEST_CASE("a sendrecv fit times point-to-point messages") {
  const json section = {
      {"preset", "dgx-a100"},
      {"collective_fits", {{"sendrecv", {{"latency_us", 8.0}, {"busbw_GBps", 20.0}, {"ranks", 8}}}}}};
  const Cluster cluster(parse_cluster(section, "cluster"));
  Engine engine;
  auto network = make_network(NetworkMode::flow, engine, cluster);
  Collectives coll(*network);
  Time arrived{};
  const double n = 64e6;
  coll.send(cluster.gpus()[0], cluster.gpus()[5], n, Protocol::simple, [&] { arrived = engine.now(); });
  engine.run();
  // α + n · 1 / B (f = 1 for sendrecv).
  CHECK(arrived == Time::from_us(8.0) + Time::from_seconds(n / 20e9));
}

TEST_CASE("collective_fits and inline GPUs are validated with their JSON path") {
  const json fit = {{"latency_us", 1.0}, {"busbw_GBps", 10.0}, {"ranks", 2}};
  CHECK(error_where({{"preset", "dgx-a100"}, {"collective_fits", {{"broadcast", fit}}}}) ==
        "cluster.collective_fits.broadcast");
  json zero_bw = fit;
  zero_bw["busbw_GBps"] = 0;
  CHECK(error_where({{"preset", "dgx-a100"}, {"collective_fits", {{"all_gather", zero_bw}}}}) ==
        "cluster.collective_fits.all_gather.busbw_GBps");
  json extra = fit;
  extra["alpha"] = 1;
  CHECK(error_where({{"preset", "dgx-a100"}, {"collective_fits", {{"all_gather", extra}}}})
            .find("cluster.collective_fits.all_gather") == 0);
  CHECK(error_where({{"preset", "dgx-a100"}, {"gpu", {{"description", "x"}}}}) == "cluster.gpu.peak_tflops");
}

TEST_CASE("the cluster JSON calibrate writes is read back by the simulator as measured") {
  spsim::analysis::Calibration c;
  c.ranks = 3;
  c.host = "testhost";
  c.peak_flops = 80e9;
  c.memory_Bps = 12e9;
  c.efficiency = {1.0, 0.8, 0.7, 0.6, 0.9, 1.0};
  c.launch_overhead_s = 2e-6;
  c.link_latency_s = 0.5e-6;
  c.link_Bps = 4e9;
  spsim::analysis::Benchmark ar{"all_reduce", "B", {}, {}};
  ar.fit.alpha = 3e-6;
  ar.fit.beta = 1 / 2.5e9;
  c.collectives.push_back(ar);
  const auto text = spsim::analysis::calibration_cluster_text(c);
  const Cluster cluster(spsim::analysis::parse_cluster_text(text, "--cluster"));
  const auto& cfg = cluster.config();
  CHECK(cfg.gpu.name == "cpu-testhost");
  CHECK(cfg.gpu.peak_flops.at("fp32") == doctest::Approx(80e9));
  CHECK(cfg.gpu.peak_flops.at("fp64") == doctest::Approx(80e9));
  CHECK(cfg.gpu.hbm_Bps == doctest::Approx(12e9));
  CHECK(cfg.gpu.op_efficiency(spsim::rt::OpClass::attention_forward) == doctest::Approx(0.8));
  CHECK(cfg.gpu.launch_overhead == Time::from_us(2.0));
  CHECK(cluster.gpus().size() == 3);
  // GPU -> switch -> GPU: two hops of the fitted per-hop latency, at the fitted bandwidth.
  const Route& r = cluster.route(cluster.gpus()[0], cluster.gpus()[1]);
  CHECK(r.latency == Time::from_us(1.0));
  CHECK(r.bottleneck_Bps == doctest::Approx(4e9));
  REQUIRE(cfg.collective_fits[0].has_value());
  CHECK(cfg.collective_fits[0]->ranks == 3);
  CHECK(cfg.collective_fits[0]->busbw_Bps == doctest::Approx(2.5e9));
  // The NCCL protocol latencies are zeroed: an uncalibrated kind (all_gather) on the ring costs only
  // the links, (P-1)(2·latency + n/P / bw), DESIGN.md §6.
  const double n = 3e6;
  const auto ag = simulate_collective(
      cluster, NetworkMode::analytical,
      CollectiveCall{CommKind::all_gather, cluster.gpus(), n, "ring", Protocol::simple, 1});
  CHECK(ag.duration().seconds() == doctest::Approx(2 * (1e-6 + n / 3 / 4e9)).epsilon(1e-6));
}
