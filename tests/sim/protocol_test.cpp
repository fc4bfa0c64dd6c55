// Tests of the NCCL protocol layer: the published constants and efficiency rules
// (shared/data/hardware-and-measurements.md, "NCCL's own model"), and tuning overrides.
#include "sim/collectives/protocol.hpp"

#include <doctest/doctest.h>

#include "analysis/config/document.hpp"
#include "runtime/core/error.hpp"

using namespace spsim::sim;

TEST_CASE("NCCL 2.20 latencies: base and per-step, per protocol and link class") {
  const auto t = nccl_protocol_table();
  auto costs = [&](Protocol p, AlgorithmFamily f) {
    return resolve_protocol(t, p, f, CommKind::all_reduce, false, 8);
  };
  // Ring base (LL / LL128 / Simple) 6.6 / 14.0 / 8.4 us; tree 6.8 / 14.0 / 0.
  CHECK(costs(Protocol::ll, AlgorithmFamily::ring).base_latency == Time::from_us(6.6));
  CHECK(costs(Protocol::ll128, AlgorithmFamily::ring).base_latency == Time::from_us(14.0));
  CHECK(costs(Protocol::simple, AlgorithmFamily::ring).base_latency == Time::from_us(8.4));
  CHECK(costs(Protocol::ll, AlgorithmFamily::tree).base_latency == Time::from_us(6.8));
  CHECK(costs(Protocol::simple, AlgorithmFamily::tree).base_latency == Time{});
  // Per step: NVLink .6 / 1.9 / 3.4, PCIe 1.0 / 2.5 / 5.7, network 2.7 / 4.0 / 14.0.
  const auto simple = costs(Protocol::simple, AlgorithmFamily::ring);
  CHECK(simple.step(LinkClass::nvlink) == Time::from_us(3.4));
  CHECK(simple.step(LinkClass::pcie) == Time::from_us(5.7));
  CHECK(simple.step(LinkClass::network) == Time::from_us(14.0));
  CHECK(costs(Protocol::ll, AlgorithmFamily::ring).step(LinkClass::network) == Time::from_us(2.7));
  CHECK(costs(Protocol::ll128, AlgorithmFamily::ring).step(LinkClass::pcie) == Time::from_us(2.5));
  // NVLS: 23 us over NVLink, 18 us over the network, Simple only.
  const auto nvls = costs(Protocol::simple, AlgorithmFamily::nvls);
  CHECK(nvls.step(LinkClass::nvlink) == Time::from_us(23));
  CHECK(nvls.step(LinkClass::network) == Time::from_us(18));
  CHECK(protocol_supported(AlgorithmFamily::nvls, Protocol::simple));
  CHECK_FALSE(protocol_supported(AlgorithmFamily::nvls, Protocol::ll));
  CHECK_FALSE(protocol_supported(AlgorithmFamily::nvls, Protocol::ll128));
}

TEST_CASE("NCCL's bandwidth efficiency rules") {
  const auto t = nccl_protocol_table();
  auto eff = [&](Protocol p, AlgorithmFamily f, CommKind k, bool multi, int per_node) {
    return resolve_protocol(t, p, f, k, multi, per_node).efficiency;
  };
  using K = CommKind;
  using F = AlgorithmFamily;
  CHECK(eff(Protocol::simple, F::ring, K::all_gather, false, 8) == 1.0);
  // LL on ring collectives: 1/2 (NCCL 2.28); elsewhere (trees, point-to-point kinds) NCCL 2.20's
  // 1/4 for all-reduce or multi-node, else 1/3.
  CHECK(eff(Protocol::ll, F::ring, K::all_reduce, false, 8) == doctest::Approx(0.5));
  CHECK(eff(Protocol::ll, F::ring, K::all_gather, true, 8) == doctest::Approx(0.5));
  CHECK(eff(Protocol::ll, F::ring, K::reduce_scatter, false, 8) == doctest::Approx(0.5));
  CHECK(eff(Protocol::ll, F::ring, K::all_to_all, false, 8) == doctest::Approx(1.0 / 3));
  CHECK(eff(Protocol::ll, F::ring, K::all_to_all, true, 8) == doctest::Approx(0.25));
  CHECK(eff(Protocol::ll, F::tree, K::all_reduce, true, 8) == doctest::Approx(0.25 * 0.92));
  // The llMaxBw cap by node count (1, 2, more) as a fraction of the group's bus-bandwidth bound.
  auto capped = t;
  capped.ll_max_busbw_Bps = {141e9, 45e9, 35e9};
  const auto ll = [&](int nodes, double bound) {
    return resolve_protocol(capped, Protocol::ll, F::ring, K::all_reduce, nodes > 1, 8, nodes, bound)
        .efficiency;
  };
  CHECK(ll(1, 360e9) == doctest::Approx(141.0 / 360));  // capped: 0.5 × 360 > 141
  CHECK(ll(1, 200e9) == doctest::Approx(0.5));          // 0.5 × 200 < 141: uncapped
  CHECK(ll(2, 380e9) == doctest::Approx(45.0 / 380));
  CHECK(ll(9, 380e9) == doctest::Approx(35.0 / 380));
  CHECK(ll(1, 0) == doctest::Approx(0.5));  // no bound known: no cap
  // LL128: 0.92, 0.7 with fewer than 2 GPUs per node.
  CHECK(eff(Protocol::ll128, F::ring, K::all_reduce, true, 8) == doctest::Approx(0.92));
  CHECK(eff(Protocol::ll128, F::ring, K::all_reduce, true, 1) == doctest::Approx(0.7));
  // Tree: x0.92 on top of the protocol's.
  CHECK(eff(Protocol::simple, F::tree, K::all_reduce, true, 8) == doctest::Approx(0.92));
  CHECK(eff(Protocol::ll128, F::tree, K::all_reduce, true, 8) == doctest::Approx(0.92 * 0.92));
  // NVLS: NCCL's algBw ratio 5/6.
  CHECK(eff(Protocol::simple, F::nvls, K::all_reduce, false, 8) == doctest::Approx(5.0 / 6));
}

TEST_CASE("tuning overrides (the cluster section's \"tuning\") and their errors") {
  // A two-GPU custom cluster (no preset, so no preset tuning) with the overrides under test.
  auto cluster = [](const nlohmann::json& tuning) {
    return spsim::analysis::parse_cluster(
        {{"gpu", "a100-sxm4-80gb"}, {"gpus_per_node", 2}, {"intra_node", "nvlink3"}, {"tuning", tuning}},
        "cluster");
  };
  const auto t = cluster({{"simple", {{"nvlink_step_latency_us", 9}}},
                          {"nvls", {{"nvlink_latency_us", 70}}},
                          {"source", "test"}})
                     .tuning;
  CHECK(resolve_protocol(t, Protocol::simple, AlgorithmFamily::ring, CommKind::all_reduce, false, 8)
            .step(LinkClass::nvlink) == Time::from_us(9));
  CHECK(resolve_protocol(t, Protocol::ll, AlgorithmFamily::ring, CommKind::all_reduce, false, 8)
            .step(LinkClass::nvlink) == Time::from_us(0.6));  // untouched
  CHECK(t.nvls_latency[0] == Time::from_us(70));
  CHECK(t.source == "test");
  auto where = [&](const nlohmann::json& j) {
    try {
      (void)cluster(j);
    } catch (const spsim::InputError& e) {
      return e.where();
    }
    return std::string();
  };
  CHECK(where({{"ll512", nlohmann::json::object()}}) == "cluster.tuning.ll512");
  CHECK(where({{"ll", {{"nvlink_step_latency_us", -1}}}}) == "cluster.tuning.ll.nvlink_step_latency_us");
  CHECK(where({{"nvls", {{"efficiency", 0}}}}) == "cluster.tuning.nvls.efficiency");
  // The NVLS channel pipeline: its three constants together, each checked; the chunk defaults to 128 KiB.
  const nlohmann::json pipe = {{"channels", 16}, {"peer_sync_us", 1.5}, {"channel_GBps", 20}};
  const auto p = cluster({{"nvls", pipe}}).tuning.nvls_pipeline;
  CHECK(p.active());
  CHECK(p.channels == 16);
  CHECK(p.peer_sync == Time::from_us(1.5));
  CHECK(p.channel_Bps == 20e9);
  CHECK(p.max_chunk_bytes == 131072);
  CHECK_FALSE(cluster({{"nvls", {{"efficiency", 0.8}}}}).tuning.nvls_pipeline.active());
  CHECK(where({{"nvls", {{"channels", 16}, {"channel_GBps", 20}}}}) == "cluster.tuning.nvls.peer_sync_us");
  CHECK(where({{"nvls", {{"max_chunk_KiB", 64}}}}) == "cluster.tuning.nvls.channels");
  auto with = [&](const char* key, const nlohmann::json& v) {
    nlohmann::json j = pipe;
    j[key] = v;
    return where({{"nvls", j}});
  };
  CHECK(with("channels", 0) == "cluster.tuning.nvls.channels");
  CHECK(with("channels", 2.5) == "cluster.tuning.nvls.channels");
  CHECK(with("channel_GBps", 0) == "cluster.tuning.nvls.channel_GBps");
  CHECK(with("channel_GBps", 2e6) == "cluster.tuning.nvls.channel_GBps");
  CHECK(with("peer_sync_us", -1) == "cluster.tuning.nvls.peer_sync_us");
  CHECK(with("max_chunk_KiB", 0) == "cluster.tuning.nvls.max_chunk_KiB");
  CHECK(with("max_chunk_KiB", "big") == "cluster.tuning.nvls.max_chunk_KiB");
  CHECK(with("max_chunk_KiB", 8) == "cluster.tuning.nvls.max_chunk_KiB");
  CHECK(with("max_chunk_KiB", 64.5) == "cluster.tuning.nvls.max_chunk_KiB");
}
