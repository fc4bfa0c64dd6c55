// Reads configs/validation/*.json (see the header).
#include "analysis/config/validation.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "analysis/config/cluster.hpp"
#include "analysis/config/files.hpp"
#include "analysis/config/json_fields.hpp"
#include "analysis/config/json_reader.hpp"
#include "runtime/core/error.hpp"

namespace spsim::analysis {

using fields::get_nonnegative;
using fields::get_positive_int;
using fields::get_string;
using fields::join_path;

namespace {

// The keys a row (with its defaults merged in) may have, by kind.
std::vector<std::string_view> row_keys(ValidationKind kind) {
  std::vector<std::string_view> keys = {"id", "use", "measured", "unit", "note", "source"};
  const auto add = [&](std::initializer_list<std::string_view> more) { keys.insert(keys.end(), more); };
  switch (kind) {
    case ValidationKind::attention_kernel:
      add({"gpu", "kernel", "pass", "causal", "batch", "heads", "kv_heads", "seq_len", "head_dim",
           "head_dim_v", "dtype"});
      break;
    case ValidationKind::gemm:
      add({"gpu", "m", "n", "k", "dtype"});
      break;
    case ValidationKind::distributed:
      add({"config", "phase"});
      break;
    case ValidationKind::collective:
      add({"cluster", "op", "bytes", "algo", "protocol", "network"});
      break;
  }
  return keys;
}

ValidationRow parse_row(const nlohmann::json& j, const std::string& path, ValidationKind kind,
                        const std::filesystem::path& file) {
  ValidationRow r;
  fields::check_keys(j, path, row_keys(kind));
  const auto need = [&](const char* key) {
    if (!j.contains(key)) throw InputError(join_path(path, key), "missing required key");
  };
  for (const char* key : {"id", "use", "measured", "unit"}) need(key);
  r.id = get_string(j, path, "id");
  const std::string use = get_string(j, path, "use");
  if (use != "calibration" && use != "validation")
    throw InputError(join_path(path, "use"), "'" + use + "'; valid choices: calibration, validation");
  r.calibration = use == "calibration";
  r.measured = get_nonnegative(j, path, "measured", true);
  r.unit = get_string(j, path, "unit");
  if (r.unit != "TFLOP/s" && r.unit != "it/s" && r.unit != "GB/s" && r.unit != "ms")
    throw InputError(join_path(path, "unit"), "'" + r.unit + "'; valid choices: TFLOP/s, it/s, GB/s, ms");
  if (j.contains("note")) r.note = get_string(j, path, "note");
  if (j.contains("source")) r.source = get_string(j, path, "source");
  if (kind == ValidationKind::distributed) {
    need("config");
    r.config = parse_config_text(j.at("config").dump(), file);
    if (r.unit != "it/s" && r.unit != "ms")
      throw InputError(join_path(path, "unit"), "a distributed row is measured in it/s or ms");
    if (j.contains("phase")) {
      r.phase = get_string(j, path, "phase");
      if (r.phase != "step" && r.phase != "forward" && r.phase != "backward")
        throw InputError(join_path(path, "phase"), "'" + r.phase + "'; valid choices: step, forward, backward");
    }
    return r;
  }
  if (r.unit == "ms") throw InputError(join_path(path, "unit"), "only distributed rows are measured in ms");
  if (kind == ValidationKind::collective) {
    for (const char* key : {"cluster", "op", "bytes"}) need(key);
    if (!j.at("cluster").is_object()) throw InputError(join_path(path, "cluster"), "expected an object");
    r.cluster = parse_cluster_text(j.at("cluster").dump(), join_path(path, "cluster"));
    const std::string op = get_string(j, path, "op");
    const auto kind_of = rt::parse_collective_op(op);
    if (!kind_of)
      throw InputError(join_path(path, "op"),
                       "unknown collective '" + op + "'; valid choices: " + rt::collective_op_choices());
    r.op = *kind_of;
    r.bytes = get_nonnegative(j, path, "bytes", true);
    if (r.bytes > 1e15) throw InputError(join_path(path, "bytes"), "at most 1e15 bytes");
    if (j.contains("algo")) r.algo = get_string(j, path, "algo");
    if (j.contains("protocol") && get_string(j, path, "protocol") != "auto") {
      const std::string name = get_string(j, path, "protocol");
      r.protocol = sim::parse_protocol(name);
      if (!r.protocol)
        throw InputError(join_path(path, "protocol"),
                         "unknown protocol '" + name + "'; valid choices: auto, " + sim::protocol_choices());
    }
    if (j.contains("network")) {
      const std::string name = get_string(j, path, "network");
      const auto mode = sim::parse_network_mode(name);
      if (!mode)
        throw InputError(join_path(path, "network"),
                         "unknown network model '" + name + "'; valid choices: flow, analytical");
      r.network = *mode;
    }
    if (r.unit != "GB/s")
      throw InputError(join_path(path, "unit"), "a collective row is measured in GB/s (nccl-tests' busbw)");
    return r;
  }
  need("gpu");
  r.gpu = get_string(j, path, "gpu");
  need("dtype");
  const auto dt = rt::parse_dtype(get_string(j, path, "dtype"));
  if (!dt) throw InputError(join_path(path, "dtype"), "unknown dtype; valid choices: bf16, fp16, fp32");
  r.dtype = *dt;
  if (kind == ValidationKind::gemm) {
    for (const char* key : {"m", "n", "k"}) need(key);
    r.m = get_positive_int(j, path, "m", 1 << 20);
    r.n = get_positive_int(j, path, "n", 1 << 20);
    r.k = get_positive_int(j, path, "k", 1 << 20);
    return r;
  }
  for (const char* key : {"kernel", "pass", "causal", "batch", "heads", "seq_len", "head_dim"}) need(key);
  r.kernel = get_string(j, path, "kernel");
  r.pass = get_string(j, path, "pass");
  if (r.pass != "fwd" && r.pass != "bwd" && r.pass != "fwd+bwd")
    throw InputError(join_path(path, "pass"), "'" + r.pass + "'; valid choices: fwd, bwd, fwd+bwd");
  r.causal = fields::get_bool(j, path, "causal");
  r.batch = get_positive_int(j, path, "batch", 4096);
  r.heads = get_positive_int(j, path, "heads", 1024);
  r.kv_heads = j.contains("kv_heads") ? get_positive_int(j, path, "kv_heads", 1024) : r.heads;
  r.seq_len = get_positive_int(j, path, "seq_len", 1 << 24);
  r.head_dim = get_positive_int(j, path, "head_dim", 1024);
  r.head_dim_v = j.contains("head_dim_v") ? get_positive_int(j, path, "head_dim_v", 1024) : r.head_dim;
  if (r.heads % r.kv_heads != 0) throw InputError(join_path(path, "kv_heads"), "must divide heads");
  return r;
}

ValidationGroup parse_group(const std::filesystem::path& file) {
  const std::string where = file.string();
  const nlohmann::json j(read_json_file(file, where));
  const std::string root = where + ":";
  fields::check_keys(
      j, root,
      {"group", "description", "kind", "tolerance_mape", "tolerance_max", "tolerance_applies_to",
       "min_seq_len", "source", "defaults", "rows", "ratios", "excluded"});
  ValidationGroup g;
  g.file = file;
  for (const char* key : {"group", "description", "kind", "tolerance_mape", "source", "rows"})
    if (!j.contains(key)) throw InputError(join_path(root, key), "missing required key");
  g.name = get_string(j, root, "group");
  g.description = get_string(j, root, "description");
  g.source = get_string(j, root, "source");
  if (j.contains("tolerance_applies_to")) g.applies_to = get_string(j, root, "tolerance_applies_to");
  const std::string kind = get_string(j, root, "kind");
  if (kind == "attention_kernel")
    g.kind = ValidationKind::attention_kernel;
  else if (kind == "gemm")
    g.kind = ValidationKind::gemm;
  else if (kind == "distributed")
    g.kind = ValidationKind::distributed;
  else if (kind == "collective")
    g.kind = ValidationKind::collective;
  else
    throw InputError(join_path(root, "kind"),
                     "'" + kind + "'; valid choices: attention_kernel, gemm, distributed, collective");
  g.tolerance_mape = get_nonnegative(j, root, "tolerance_mape", true);
  if (j.contains("tolerance_max")) g.tolerance_max = get_nonnegative(j, root, "tolerance_max", true);
  if (j.contains("min_seq_len")) g.min_seq_len = get_positive_int(j, root, "min_seq_len", 1 << 24);
  const nlohmann::json defaults = j.contains("defaults") ? j.at("defaults") : nlohmann::json::object();
  if (!defaults.is_object()) throw InputError(join_path(root, "defaults"), "expected an object");
  const auto& rows = j.at("rows");
  if (!rows.is_array() || rows.empty())
    throw InputError(join_path(root, "rows"), "expected a non-empty array");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string path = root + "rows[" + std::to_string(i) + "]";
    if (!rows[i].is_object()) throw InputError(path, "expected an object");
    nlohmann::json row = defaults;
    for (const auto& [k, v] : rows[i].items()) row[k] = v;
    g.rows.push_back(parse_row(row, path, g.kind, file));
    for (std::size_t p = 0; p + 1 < g.rows.size(); ++p)
      if (g.rows[p].id == g.rows.back().id)
        throw InputError(join_path(path, "id"), "duplicate id " + g.rows.back().id);
  }
  if (j.contains("ratios")) {
    if (!j.at("ratios").is_array()) throw InputError(join_path(root, "ratios"), "expected an array");
    for (std::size_t i = 0; i < j.at("ratios").size(); ++i) {
      const auto& r = j.at("ratios")[i];
      const std::string path = root + "ratios[" + std::to_string(i) + "]";
      fields::check_keys(r, path, {"name", "num", "den", "tolerance"});
      ValidationRatio ratio{get_string(r, path, "name"), get_string(r, path, "num"),
                            get_string(r, path, "den"), get_nonnegative(r, path, "tolerance", true)};
      for (const auto* id : {&ratio.num, &ratio.den})
        if (std::ranges::none_of(g.rows, [&](const ValidationRow& row) { return row.id == *id; }))
          throw InputError(path, "no row with id '" + *id + "'");
      g.ratios.push_back(ratio);
    }
  }
  return g;
}

}  // namespace

std::vector<ValidationGroup> load_validation(const std::filesystem::path& dir_in) {
  const auto dir = dir_in.empty() ? config_dir() / "validation" : dir_in;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw InputError(dir.string(), "no such folder");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::ranges::sort(files);
  std::vector<ValidationGroup> out;
  for (const auto& f : files) out.push_back(parse_group(f));
  return out;
}

}  // namespace spsim::analysis
