// Experiment config parsing: the JSON document (DESIGN.md §7) into typed, validated structs.
#include "analysis/config/config.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <system_error>

#include "analysis/config/document.hpp"
#include "analysis/config/model.hpp"
#include "analysis/config/schema.hpp"
#include "analysis/config/sweep.hpp"
#include "models/documents.hpp"
#include "runtime/core/error.hpp"
#include "sim/compute/attention_kernel.hpp"

namespace spsim::analysis {

namespace fs = std::filesystem;

const strategies::StrategyInfo& StrategyConfig::info() const {
  if (entry) return *entry;
  const auto* found = strategies::builtin().find(name);
  if (!found)
    throw InputError("strategy.name", "unknown strategy '" + name + "'; valid strategies: " +
                                          join_names(strategies::builtin().names()));
  return *found;
}

const strategies::LayerInfo& LayerConfig::info() const {
  if (entry) return *entry;
  const auto* found = strategies::find_layer_strategy(name);
  if (!found)
    throw InputError("layer.name", "unknown layer strategy '" + name + "'; valid layer strategies: " +
                                       join_names(strategies::layer_strategy_names()));
  return *found;
}

namespace {

int to_int(std::int64_t v, const std::string& where) {
  if (v > INT_MAX)
    throw InputError(where, "must be <= " + std::to_string(INT_MAX) + ", got " + std::to_string(v));
  return static_cast<int>(v);
}

void check_schema_version(const JsonObject& root) {
  const auto v = root.integer("schema_version", 0);
  if (v != schema::version)
    throw InputError("schema_version", "unsupported schema_version " + std::to_string(v) +
                                           "; this spsim reads version " + std::to_string(schema::version));
}

// At most this many documents: a block's mask is counted per document it spans, so the count bounds
// the cost of every masked block (a striped rank spans them all).
constexpr std::int64_t kMaxDocuments = std::int64_t{1} << 16;

std::vector<std::int64_t> parse_documents(const JsonObject& mask, std::int64_t seq_len) {
  const Json& docs = mask.at("documents");
  const std::string where = mask.path("documents");
  const auto too_many = [&](std::int64_t n, const std::string& advice) {
    return InputError(where, std::to_string(n) + " documents is more than spsim handles (" +
                                 std::to_string(kMaxDocuments) + "); " + advice);
  };
  if (docs.is_array()) {
    if (docs.empty()) throw InputError(where, "expected at least one document length, got an empty list");
    if (static_cast<std::int64_t>(docs.size()) > kMaxDocuments)
      throw too_many(static_cast<std::int64_t>(docs.size()), "give fewer, longer documents");
    std::vector<std::int64_t> lengths;
    std::int64_t total = 0;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      const std::int64_t len = expect_integer(docs[i], json_index(where, i), 1);
      if (len > seq_len - total)
        throw InputError(json_index(where, i), "the document lengths sum past workload.seq_len = " +
                                                   std::to_string(seq_len) + " (documents 0.." +
                                                   std::to_string(i) + " need " + std::to_string(total + len) +
                                                   " tokens)");
      total += len;
      lengths.push_back(len);
    }
    if (total != seq_len)
      throw InputError(where, "the document lengths sum to " + std::to_string(total) + ", not workload.seq_len = " +
                                  std::to_string(seq_len));
    return lengths;
  }
  if (!docs.is_object())
    throw InputError(where, "expected a list of document lengths or {\"distribution\": …}, got " +
                                describe_json(docs));
  const JsonObject d(docs, where, schema::document_draw_keys);
  models::DocumentDraw draw;
  draw.distribution = expect_choice(d.at("distribution"), d.path("distribution"), models::document_distributions());
  draw.max_len = d.integer("max_len", 1);
  draw.min_len = d.integer_or("min_len", 1, 1);
  if (draw.min_len > draw.max_len)
    throw InputError(d.path("min_len"), "must be <= max_len = " + std::to_string(draw.max_len) + ", got " +
                                            std::to_string(draw.min_len));
  if (draw.distribution == "exponential") {
    draw.mean_len = d.integer("mean_len", 1);
  } else if (d.has("mean_len")) {
    throw InputError(d.path("mean_len"), "is for the exponential distribution only; uniform takes min_len and "
                                         "max_len");
  }
  draw.pad_to = d.integer_or("pad_to", 1, 1);
  if (draw.pad_to > seq_len)
    throw InputError(d.path("pad_to"), "must be <= workload.seq_len = " + std::to_string(seq_len) + ", got " +
                                           std::to_string(draw.pad_to));
  draw.seed = d.unsigned_or("seed", 0);
  // Every drawn length is at least max(min_len, pad_to) but the last: a bound on the count before drawing.
  const std::int64_t shortest = std::max(draw.min_len, draw.pad_to);
  if (seq_len / shortest + 1 > kMaxDocuments)
    throw too_many(seq_len / shortest + 1, "raise min_len (every document is at least min_len and pad_to tokens, "
                                       "so up to seq_len / min_len of them are drawn)");
  return models::draw_document_lengths(draw, seq_len);
}

// workload.mask → the causal direction and the bounds (documents, window). `causal` is
// workload.causal when given (it must agree with the mask's kind).
void parse_mask(const JsonObject& w, models::Workload& out) {
  const bool causal_given = w.has("causal");
  if (!w.has("mask")) {
    out.causal = w.boolean_or("causal", false);
    return;
  }
  const Json& value = w.at("mask");
  const std::string where = w.path("mask");
  std::string kind;
  std::vector<std::int64_t> documents;
  std::int64_t window = 0;
  bool causal = true;
  if (value.is_string()) {
    kind = expect_choice(value, where, schema::mask_kinds);
    if (kind == "document_causal" || kind == "sliding_window")
      throw InputError(where, "'" + kind + "' needs parameters: write {\"kind\": \"" + kind + "\", " +
                                  (kind == "document_causal" ? "\"documents\": [lengths…]}" : "\"window\": W}"));
    causal = kind == "causal";
  } else if (value.is_object()) {
    const JsonObject m(value, where, schema::mask_keys);
    kind = expect_choice(m.at("kind"), m.path("kind"), schema::mask_kinds);
    const auto refuse = [&](const char* key, const std::string& why) {
      if (m.has(key)) throw InputError(m.path(key), "does not apply to mask kind '" + kind + "': " + why);
    };
    if (kind == "causal" || kind == "full") {
      refuse("documents", "use kind document_causal");
      refuse("window", "use kind sliding_window");
      refuse("causal", "the kind says it");
      causal = kind == "causal";
    } else if (kind == "document_causal") {
      refuse("causal", "documents are causal; a bidirectional document mask is not supported");
      documents = parse_documents(m, out.seq_len);
      window = m.has("window") ? m.integer("window", 1) : 0;
    } else {  // sliding_window
      refuse("documents", "use kind document_causal with a window");
      window = m.integer("window", 1);
      causal = m.boolean_or("causal", true);
    }
  } else {
    throw InputError(where, "expected a mask kind (one of " + join_names(schema::mask_kinds) +
                                ") or an object {\"kind\": …}, got " + describe_json(value));
  }
  if (causal_given && w.boolean_or("causal", false) != causal)
    throw InputError(w.path("causal"), std::string("is ") + (causal ? "false" : "true") + " but workload.mask (" +
                                           kind + ") is " + (causal ? "causal" : "not causal") +
                                           "; drop workload.causal or make it agree");
  out.causal = causal;
  // A window of seq_len or more restricts nothing; clamped so that the pair counts never shift a
  // position by more than the sequence.
  out.bounds = rt::MaskBounds(documents, std::min(window, out.seq_len));
}

models::Workload parse_workload(const JsonObject& root) {
  const auto w = root.object("workload", schema::workload_keys);
  models::Workload out;
  out.seq_len = w.integer("seq_len", 1);
  out.batch = w.integer_or("batch", 1, 1);
  out.dtype = rt::parse_dtype(w.choice_or("dtype", schema::workload_dtypes, "bf16")).value();
  parse_mask(w, out);
  const auto scope = w.choice_or("scope", schema::scopes, "attention");
  out.scope = scope == "attention" ? models::Scope::attention
              : scope == "layer"   ? models::Scope::layer
                                   : models::Scope::model;
  out.passes = w.choice_or("passes", schema::passes, "fwd+bwd") == "fwd" ? models::Passes::fwd
                                                                         : models::Passes::fwd_bwd;
  out.recompute = w.boolean_or("recompute", false);
  return out;
}

// Option values are kept as strings (the registry's vocabulary); JSON integers are accepted for
// numeric options and booleans for true/false ones. Keys and values are checked against the strategy
// in finalize().
strategies::Options parse_options(const JsonObject& strategy) {
  strategies::Options out;
  if (!strategy.has("options")) return out;
  const Json& options = strategy.at("options");
  const std::string where = strategy.path("options");
  if (!options.is_object())
    throw InputError(where, "expected an object of option: value, got " + describe_json(options));
  for (const auto& item : options.items()) {
    const Json& v = item.value();
    if (v.is_string()) {
      out[item.key()] = v.get<std::string>();
    } else if (v.is_number_integer() || v.is_boolean()) {
      out[item.key()] = v.dump();
    } else {
      throw InputError(json_child(where, item.key()),
                       "expected a string, an integer or a boolean, got " + describe_json(v));
    }
  }
  return out;
}

StrategyConfig parse_strategy(const JsonObject& root, const strategies::Registry& registry) {
  const auto s = root.object("strategy", schema::strategy_keys);
  StrategyConfig out;
  out.name = s.string("name");
  out.entry = registry.find(out.name);
  if (out.entry == nullptr)
    throw InputError(s.path("name"), "unknown strategy '" + out.name +
                                         "'; valid strategies: " + join_names(registry.names()));
  out.degree = s.has("degree") ? to_int(s.integer("degree", 1), s.path("degree")) : 0;  // 0: parallel.cp's
  out.options = parse_options(s);
  return out;
}

// `layer` (optional): the layer strategy's name and options. Without a name it is megatron_sp when
// parallel.tp > 1 or options are given (the replicated layer has none; at tp 1 megatron_sp computes
// what it does), else replicated.
LayerConfig parse_layer(const JsonObject& root, int tp) {
  const auto obj = root.object_or_empty("layer", schema::layer_keys);
  LayerConfig out;
  out.name = obj.choice_or("name", strategies::layer_strategy_names(),
                           tp > 1 || obj.has("options") ? "megatron_sp" : "replicated");
  out.entry = strategies::find_layer_strategy(out.name);
  out.options = parse_options(obj);
  return out;
}

CollectivesConfig parse_collectives(const JsonObject& root) {
  const auto obj = root.object_or_empty("collectives", schema::collectives_keys());
  CollectivesConfig out;
  for (rt::CommKind kind : rt::tuned_kinds()) {
    const std::string key(rt::comm_kind_name(kind));
    out.of(kind) = schema::canonical_algorithm(obj.choice_or(key, schema::algorithm_choices(kind), "auto"));
  }
  const std::string protocol = obj.choice_or("protocol", schema::protocol_choices(), "auto");
  if (protocol != "auto") out.protocol = sim::parse_protocol(protocol).value();
  return out;
}

SimulationConfig parse_simulation(const JsonObject& root) {
  const auto obj = root.object_or_empty("simulation", schema::simulation_keys);
  SimulationConfig out;
  out.network = sim::parse_network_mode(obj.choice_or("network", schema::networks(), "flow")).value();
  out.trace_out = obj.string_or("trace_out", "");
  std::vector<std::string> kernels;
  for (const auto& f : sim::kernel_families()) kernels.push_back(f.name);
  out.attention_kernel = obj.choice_or("attention_kernel", kernels, "");
  if (obj.has("compute_slowdown")) {
    const Json& v = obj.at("compute_slowdown");
    if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
      throw InputError(
          obj.path("compute_slowdown"),
          "expected a number >= 0 (0.1 = compute 10% slower during communication), got " + describe_json(v));
    out.compute_slowdown = v.get<double>();
    out.compute_slowdown_basis = SimulationConfig::kGivenBasis;
  }
  return out;
}

CheckConfig parse_check(const JsonObject& root) {
  const auto obj = root.object_or_empty("check", schema::check_keys);
  CheckConfig out;
  out.dtype_given = obj.has("dtype");
  out.dtype =
      obj.choice_or("dtype", schema::check_dtypes, "float64") == "float32" ? rt::DType::f32 : rt::DType::f64;
  out.seed = obj.unsigned_or("seed", 1);
  return out;
}

// The cluster section, parsed last so that errors of the other sections come first.
std::optional<sim::ClusterConfig> parse_cluster_section(const JsonObject& root) {
  if (!root.has("cluster")) return std::nullopt;
  const Json& cluster = root.at("cluster");
  if (!cluster.is_object()) throw InputError("cluster", "expected an object, got " + describe_json(cluster));
  if (cluster.empty()) return std::nullopt;
  return parse_cluster(nlohmann::json(cluster), "cluster");
}

// Every field on its own (types, ranges, names); no cross-field constraints.
Config parse_fields(const Json& doc, const fs::path& source, const strategies::Registry& registry) {
  const JsonObject root(doc, "", schema::top_keys);
  Config c;
  c.source = source;
  c.document = std::make_shared<const ConfigDocument>(ConfigDocument{doc});
  c.name = root.string_or("name", source.empty() ? "experiment" : source.stem().string());
  c.model = parse_model(root.object("model", schema::model_keys), source.parent_path());
  c.workload = parse_workload(root);
  if (root.has("cluster") && !root.at("cluster").is_object())
    throw InputError("cluster", "expected an object, got " + describe_json(root.at("cluster")));
  c.strategy = parse_strategy(root, registry);
  const auto parallel = root.object_or_empty("parallel", schema::parallel_keys);
  c.parallel.tp = to_int(parallel.integer_or("tp", 1, 1), parallel.path("tp"));
  c.parallel.dp = to_int(parallel.integer_or("dp", 1, 1), parallel.path("dp"));
  // The CP degree: strategy.degree or parallel.cp (the same number when both are given).
  if (parallel.has("cp")) {
    const int cp = to_int(parallel.integer("cp", 1), parallel.path("cp"));
    if (c.strategy.degree != 0 && c.strategy.degree != cp)
      throw InputError(parallel.path("cp"), "parallel.cp " + std::to_string(cp) + " and strategy.degree " +
                                                std::to_string(c.strategy.degree) +
                                                " both give the context-parallel degree and differ; give one");
    c.strategy.degree = cp;
    c.strategy.degree_key = parallel.path("cp");
  }
  if (c.strategy.degree == 0)
    throw InputError("strategy.degree", "missing the context-parallel degree: give strategy.degree or parallel.cp");
  c.layer = parse_layer(root, c.parallel.tp);
  c.parallel.distributed_optimizer = parallel.boolean_or("distributed_optimizer", false);
  if (parallel.has("bucket_mb")) {
    c.parallel.bucket_mb = expect_positive_number(parallel.at("bucket_mb"), parallel.path("bucket_mb"));
    if (c.parallel.bucket_mb > 1e12)  // past 2^60 bytes: "one bucket of everything" is 1e6 already
      throw InputError(parallel.path("bucket_mb"),
                       "must be at most 1e12 MiB, got " + parallel.at("bucket_mb").dump());
  }
  c.collectives = parse_collectives(root);
  c.simulation = parse_simulation(root);
  c.check = parse_check(root);
  return c;
}

// Tensors spsim can index and time: at most 2^50 elements in any attention or weight tensor (int64
// byte counts, durations within the simulator's picosecond clock), at most 2^20 ranks in the world.
void check_sizes(const Config& c) {
  const auto& w = c.workload;
  const auto& m = c.model;
  const double limit = std::ldexp(1.0, 50);
  const double attention = static_cast<double>(w.batch) * static_cast<double>(m.heads) *
                           static_cast<double>(w.seq_len) * static_cast<double>(m.head_dim);
  if (attention > limit)
    throw InputError(
        "workload",
        "the attention tensors hold batch × heads × seq_len × head_dim = " + std::to_string(w.batch) + " × " +
            std::to_string(m.heads) + " × " + std::to_string(w.seq_len) + " × " + std::to_string(m.head_dim) +
            " elements, more than the 2^50 spsim handles (workload.batch, workload.seq_len, "
            "model.heads, model.head_dim)");
  const double widest = std::max({static_cast<double>(m.hidden), static_cast<double>(m.ffn_hidden),
                                  static_cast<double>(m.heads) * static_cast<double>(m.head_dim)});
  if (static_cast<double>(m.hidden) * widest > limit ||
      static_cast<double>(w.batch) * static_cast<double>(w.seq_len) * widest > limit)
    throw InputError("model",
                     "a weight or activation tensor would hold more than 2^50 elements (model.hidden " +
                         std::to_string(m.hidden) + ", model.ffn_hidden " + std::to_string(m.ffn_hidden) +
                         ", workload.batch × seq_len " + std::to_string(w.batch) + " × " +
                         std::to_string(w.seq_len) + ")");
  if (static_cast<double>(m.vocab) * static_cast<double>(m.hidden) > limit)
    throw InputError("model.vocab", "the embedding would hold vocab × hidden = " + std::to_string(m.vocab) +
                                        " × " + std::to_string(m.hidden) + " elements, more than 2^50");
  if (m.layers > 100000)
    throw InputError("model.layers", "at most 100000 layers, got " + std::to_string(m.layers));
  if (c.world() > (std::int64_t{1} << 20))
    throw InputError(c.world_key(), "parallel.tp × " + c.strategy.degree_key + " × parallel.dp = " +
                                        std::to_string(c.parallel.tp) + " × " + std::to_string(c.strategy.degree) +
                                        " × " + std::to_string(c.parallel.dp) +
                                        " ranks, more than the 1048576 spsim simulates");
}

// Cross-field constraints; completes the strategy options with their defaults.
void finalize(Config& c, const strategies::Registry& registry) {
  check_model(c.model);
  check_sizes(c);
  const strategies::StrategyInfo& info = *registry.find(c.strategy.name);
  c.strategy.options = registry.complete_options(info, c.strategy.options, "strategy.options");
  if (c.model.attention_dropout > 0 && !info.attention_dropout) {
    std::vector<std::string> with;
    for (const auto& name : registry.names())
      if (registry.find(name)->attention_dropout) with.push_back(name);
    throw InputError("model.attention_dropout",
                     "dropout on the attention probabilities is modelled only for an unfused attention that "
                     "materialises them (strategy " + join_names(with) + "); '" + c.strategy.name +
                         "' runs fused kernels: set model.attention_dropout to 0");
  }
  const strategies::LayerInfo& layer = c.layer.info();
  c.layer.options = strategies::complete_layer_options(layer, c.layer.options, "layer.options");
  check_parallel_layout(c);
}

// `doc` with its cluster section replaced by the --cluster argument.
Json with_cluster_override(Json doc, const ConfigOverrides& overrides) {
  if (overrides.cluster.empty() || !doc.is_object()) return doc;
  const fs::path path(overrides.cluster);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    Json section = read_json_file(path, "--cluster");
    if (!section.is_object())
      throw InputError("--cluster", "'" + overrides.cluster + "' does not hold a JSON object");
    (void)parse_cluster(nlohmann::json(section), "--cluster");
    doc["cluster"] = std::move(section);
  } else if (path.extension() == ".json" || overrides.cluster.find('/') != std::string::npos) {
    throw InputError("--cluster", "no such file '" + overrides.cluster + "'");
  } else {
    (void)parse_cluster(nlohmann::json{{"preset", overrides.cluster}}, "--cluster");
    doc["cluster"] = Json{{"preset", overrides.cluster}};
  }
  return doc;
}

}  // namespace

// The compute slowdown during communication, unless the config gives it: a communication kernel runs
// one CTA per NCCL channel and each holds its SM for the kernel's whole run (NCCL's CTAs take 512+
// threads and their registers, so a GEMM's or an attention kernel's CTA does not fit beside one), so
// compute keeps SMs − C of the SMs and takes SMs / (SMs − C) as long: a slowdown of C / (SMs − C).
void resolve_compute_slowdown(Config& c) {
  if (c.simulation.compute_slowdown_given()) return;
  c.simulation.compute_slowdown = SimulationConfig{}.compute_slowdown;
  c.simulation.compute_slowdown_basis = SimulationConfig{}.compute_slowdown_basis;
  if (!c.cluster) return;
  const int channels = c.cluster->tuning.channels;
  if (channels <= 0) return;
  if (!c.cluster->gpu.sm) {
    c.simulation.compute_slowdown_basis += " (the GPU gives no SM count for NCCL's " + std::to_string(channels) +
                                           " channels)";
    return;
  }
  const int sms = c.cluster->gpu.sm->sm_count;
  if (channels >= sms)
    throw InputError("cluster.tuning.channels.count",
                     std::to_string(channels) + " channels (the preset's or the config's) would leave none of the " +
                         c.cluster->gpu.name + "'s " + std::to_string(sms) +
                         " SMs to compute; give fewer channels, or simulation.compute_slowdown");
  c.simulation.compute_slowdown = static_cast<double>(channels) / (sms - channels);
  c.simulation.compute_slowdown_basis = "NCCL's " + std::to_string(channels) + " channels hold " +
                                        std::to_string(channels) + " of " + std::to_string(sms) + " SMs";
}

void check_parallel_layout(const Config& c) {
  const strategies::LayerInfo& layer = c.layer.info();
  const models::AttnProblem problem = models::attention_problem(c.model, c.workload);
  if (c.workload.scope == models::Scope::attention) {
    if (c.parallel.tp > 1)
      throw InputError("parallel.tp", "tensor parallelism (tp " + std::to_string(c.parallel.tp) +
                                          ") shards a layer's weights: use workload.scope layer or model");
    if (c.layer.name != "replicated")
      throw InputError("layer.name", "layer strategy '" + c.layer.name +
                                         "' needs workload.scope layer or model, not attention");
  } else if (auto refusal = layer.check(c.model, problem, {c.parallel.tp, c.strategy.degree, c.parallel.dp},
                                        c.layer.options)) {
    throw InputError(refusal->where, refusal->why);
  }
  const auto& info = c.strategy.info();
  if (!info.check) return;
  const models::AttnProblem local = c.workload.scope == models::Scope::attention
                                        ? problem
                                        : layer.attention_problem(problem, c.parallel.tp, c.layer.options);
  if (auto reason = info.check(local, c.strategy.degree, c.strategy.options))
    throw InputError("strategy", "'" + c.strategy.name + "' at degree " + std::to_string(c.strategy.degree) +
                                     (c.parallel.tp > 1 ? " on each TP rank's " + std::to_string(local.heads) + " heads"
                                                        : std::string()) +
                                     " cannot run this workload: " + *reason);
}

Config parse_config(const Json& doc, const fs::path& source, const strategies::Registry& registry) {
  if (!doc.is_object())
    throw InputError(source.empty() ? "config" : source.string(),
                     "a config must be a JSON object, got " + describe_json(doc));
  const JsonObject root(doc, "", schema::top_keys);
  check_schema_version(root);
  auto axes = parse_sweep_axes(root, registry);
  if (axes.empty()) {
    Config c = parse_fields(doc, source, registry);
    finalize(c, registry);
    c.cluster = parse_cluster_section(root);
    resolve_compute_slowdown(c);
    return c;
  }
  // A sweep template: fields as at the first point (so a swept key may be absent from the base).
  std::vector<SweepValue> first;
  for (const auto& axis : axes) first.push_back(axis.values.front());
  // Its cluster is the first point's when that one is valid: each point parses its own, and an invalid
  // cluster is that point's error, not the sweep's.
  const Json first_doc = point_document(doc, first);
  Config c = parse_fields(first_doc, source, registry);
  try {
    c.cluster = parse_cluster_section(JsonObject(first_doc, "", schema::top_keys));
    resolve_compute_slowdown(c);
  } catch (const InputError&) {
    c.cluster.reset();
  }
  c.document = std::make_shared<const ConfigDocument>(ConfigDocument{doc});
  c.sweep = std::move(axes);
  return c;
}

const Json& config_document(const Config& config) {
  static const Json empty = Json::object();  // immutable; a hand-built config has no document
  return config.document ? config.document->json : empty;
}

Config load_config(const fs::path& path, const ConfigOverrides& overrides,
                   const strategies::Registry& registry) {
  return parse_config(with_cluster_override(read_json_file(path, path.string()), overrides), path, registry);
}

Config parse_config_text(const std::string& json_text, const fs::path& source,
                         const strategies::Registry& registry) {
  return parse_config(parse_json_text(json_text, source.empty() ? "config" : source.string()), source,
                      registry);
}

Config config_with(const Config& config, const std::vector<SweepValue>& values,
                   const strategies::Registry& registry) {
  return parse_config(point_document(config_document(config), values), config.source, registry);
}

sim::ClusterConfig load_cluster_argument(const std::string& argument, const std::string& where) {
  const fs::path path(argument);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    const Json section = read_json_file(path, where);
    if (!section.is_object()) throw InputError(where, "'" + argument + "' does not hold a JSON object");
    return parse_cluster(nlohmann::json(section), where);
  }
  if (path.extension() == ".json" || argument.find('/') != std::string::npos)
    throw InputError(where, "no such file '" + argument + "'");
  return parse_cluster(nlohmann::json{{"preset", argument}}, where);
}

}  // namespace spsim::analysis
