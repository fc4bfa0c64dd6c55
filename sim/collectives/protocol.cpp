// NCCL protocol constants and the rules that turn them into one call's costs.
#include "sim/collectives/protocol.hpp"

#include "runtime/core/error.hpp"
#include "sim/cluster/json_fields.hpp"

namespace spsim::sim {

using detail::check_keys;
using detail::get_nonnegative;
using detail::join_path;

ProtocolTable nccl_protocol_table() {
  ProtocolTable t;
  auto us = [](double v) { return Time::from_us(v); };
  auto& ll = t.protocols[static_cast<std::size_t>(Protocol::ll)];
  auto& ll128 = t.protocols[static_cast<std::size_t>(Protocol::ll128)];
  auto& simple = t.protocols[static_cast<std::size_t>(Protocol::simple)];
  ll = {us(6.6), us(6.8), {us(0.6), us(1.0), us(2.7)}};
  ll128 = {us(14.0), us(14.0), {us(1.9), us(2.5), us(4.0)}};
  simple = {us(8.4), us(0.0), {us(3.4), us(5.7), us(14.0)}};
  t.nvls_latency = {us(23.0), us(18.0)};
  t.source = "NCCL 2.20 src/graph/tuning.cc";
  return t;
}

static void apply_entry(ProtocolTable::Entry& e, const nlohmann::json& j, const std::string& path) {
  check_keys(j, path,
             {"base_latency_us", "tree_base_latency_us", "nvlink_step_latency_us", "pcie_step_latency_us",
              "network_step_latency_us"});
  auto set = [&](const char* key, Time& out) {
    if (j.contains(key)) out = Time::from_us(get_nonnegative(j, path, key));
  };
  set("base_latency_us", e.ring_base_latency);
  set("tree_base_latency_us", e.tree_base_latency);
  set("nvlink_step_latency_us", e.step_latency[0]);
  set("pcie_step_latency_us", e.step_latency[1]);
  set("network_step_latency_us", e.step_latency[2]);
}

void apply_tuning(ProtocolTable& table, const nlohmann::json& tuning, const std::string& path) {
  check_keys(tuning, path, {"simple", "ll", "ll128", "nvls", "source"});
  for (int p = 0; p < kProtocols; ++p) {
    const char* name = protocol_name(static_cast<Protocol>(p));
    if (tuning.contains(name))
      apply_entry(table.protocols[static_cast<std::size_t>(p)], tuning.at(name), join_path(path, name));
  }
  if (tuning.contains("nvls")) {
    const auto& j = tuning.at("nvls");
    const std::string np = join_path(path, "nvls");
    check_keys(j, np, {"nvlink_latency_us", "network_latency_us", "efficiency"});
    if (j.contains("nvlink_latency_us"))
      table.nvls_latency[0] = Time::from_us(get_nonnegative(j, np, "nvlink_latency_us"));
    if (j.contains("network_latency_us"))
      table.nvls_latency[1] = Time::from_us(get_nonnegative(j, np, "network_latency_us"));
    if (j.contains("efficiency")) table.nvls_efficiency = get_nonnegative(j, np, "efficiency", true);
  }
  if (tuning.contains("source")) table.source = detail::get_string(tuning, path, "source");
}

bool protocol_supported(AlgorithmFamily family, Protocol p) {
  return family != AlgorithmFamily::nvls || p == Protocol::simple;
}

ProtocolCosts resolve_protocol(const ProtocolTable& table, Protocol p, AlgorithmFamily family,
                               CommKind kind, bool multi_node, int min_gpus_per_node) {
  const auto& e = table.protocols[static_cast<std::size_t>(p)];
  ProtocolCosts c;
  c.step_latency = e.step_latency;
  if (family == AlgorithmFamily::nvls) {
    // One in-switch step; its latency is the NVLS constant of the fabric it crosses.
    c.base_latency = Time{};
    c.step_latency = {table.nvls_latency[0], table.nvls_latency[0], table.nvls_latency[1]};
    c.efficiency = table.nvls_efficiency;
    return c;
  }
  c.base_latency = family == AlgorithmFamily::tree ? e.tree_base_latency : e.ring_base_latency;
  if (p == Protocol::ll)
    c.efficiency = (multi_node || kind == CommKind::all_reduce)
                       ? table.ll_efficiency_allreduce_or_multinode
                       : table.ll_efficiency_other;
  else if (p == Protocol::ll128)
    c.efficiency = min_gpus_per_node < 2 ? table.ll128_efficiency_one_gpu_per_node : table.ll128_efficiency;
  if (family == AlgorithmFamily::tree) c.efficiency *= table.tree_efficiency;
  return c;
}

}  // namespace spsim::sim
