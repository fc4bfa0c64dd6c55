// Sweep axes: which dotted paths may be swept, per-value validation, and the cartesian expansion.
#include "analysis/config/sweep.hpp"

#include <algorithm>

#include "analysis/config/document.hpp"
#include "analysis/config/model.hpp"
#include "analysis/config/schema.hpp"
#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace {

enum class Kind : std::uint8_t {
  integer,
  unsigned_integer,
  positive_number,
  probability,  // a number in [0, 1)
  text,
  choice,
  boolean,
  option,
  layer_option,
  strategy,
  parallel,
  mask
};

// A settable path and what a value on it must be. Values are checked here, one by one, so that a point
// of the expanded sweep can only fail on a combination of values (reported per point, not thrown).
struct Settable {
  std::string path;
  Kind kind;
  std::int64_t min = 0;              // Kind::integer
  std::vector<std::string> choices;  // Kind::choice
};

const std::string options_prefix = "strategy.options.";
const std::string layer_options_prefix = "layer.options.";

std::vector<std::string> layer_option_names() {
  std::vector<std::string> names;
  for (const auto& l : strategies::layer_strategies())
    for (const auto& o : l.options)
      if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
  return names;
}

std::vector<std::string> option_names(const strategies::Registry& registry) {
  std::vector<std::string> names;
  for (const auto& s : registry.names())
    for (const auto& o : registry.find(s)->options)
      if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
  return names;
}

std::vector<Settable> settable(const strategies::Registry& registry) {
  std::vector<Settable> out;
  out.push_back({"model.preset", Kind::choice, 0, model_preset_names()});
  out.push_back({"model.mlp", Kind::choice, 0, schema::mlp_kinds});
  for (const auto& key : schema::dropout_keys) out.push_back({"model." + key, Kind::probability, 0, {}});
  for (const auto& dim : schema::model_dims)
    out.push_back({std::string("model.") + dim.key, Kind::integer, dim.min, {}});
  out.push_back({"workload.seq_len", Kind::integer, 1, {}});
  out.push_back({"workload.batch", Kind::integer, 1, {}});
  out.push_back({"workload.dtype", Kind::choice, 0, schema::workload_dtypes});
  out.push_back({"workload.causal", Kind::boolean, 0, {}});
  // A whole mask (a kind name or {kind, documents, window, causal}: it replaces the base's), or one of
  // its numbers in a base that has the object.
  out.push_back({"workload.mask", Kind::mask, 0, schema::mask_kinds});
  out.push_back({"workload.mask.window", Kind::integer, 1, {}});
  out.push_back({"workload.mask.documents.seed", Kind::unsigned_integer, 0, {}});
  out.push_back({"workload.mask.documents.min_len", Kind::integer, 1, {}});
  out.push_back({"workload.mask.documents.max_len", Kind::integer, 1, {}});
  out.push_back({"workload.mask.documents.mean_len", Kind::integer, 1, {}});
  out.push_back({"workload.scope", Kind::choice, 0, schema::scopes});
  out.push_back({"workload.passes", Kind::choice, 0, schema::passes});
  out.push_back({"workload.recompute", Kind::boolean, 0, {}});
  // The cluster schema belongs to the simulator; these are checked for type here, for meaning there.
  out.push_back({"cluster.preset", Kind::text, 0, {}});
  out.push_back({"cluster.gpu", Kind::text, 0, {}});
  out.push_back({"cluster.nodes", Kind::integer, 1, {}});
  out.push_back({"cluster.gpus_per_node", Kind::integer, 1, {}});
  out.push_back({"cluster.inter_node.fabric.nodes_per_leaf", Kind::integer, 1, {}});
  out.push_back({"cluster.inter_node.fabric.oversubscription", Kind::positive_number, 0, {}});
  out.push_back({"cluster.inter_node.fabric.kind", Kind::choice, 0, {"single_switch", "fat_tree", "rail_optimized"}});
  out.push_back({"cluster.inter_node.fabric.sharp", Kind::boolean, 0, {}});
  out.push_back({"cluster.inter_node.fabric.pxn", Kind::boolean, 0, {}});
  // A whole strategy ({"name", "options", "degree"}), so one axis can list strategies with their own
  // options (a strategy.name × strategy.options.X product would pair options with strategies lacking them).
  out.push_back({"strategy", Kind::strategy, 0, registry.names()});
  out.push_back({"strategy.name", Kind::choice, 0, registry.names()});
  out.push_back({"strategy.degree", Kind::integer, 1, {}});
  for (const auto& name : option_names(registry)) out.push_back({options_prefix + name, Kind::option, 0, {}});
  out.push_back({"layer.name", Kind::choice, 0, strategies::layer_strategy_names()});
  for (const auto& name : layer_option_names())
    out.push_back({layer_options_prefix + name, Kind::layer_option, 0, {}});
  out.push_back({"parallel.tp", Kind::integer, 1, {}});
  out.push_back({"parallel.cp", Kind::integer, 1, {}});
  out.push_back({"parallel.dp", Kind::integer, 1, {}});
  out.push_back({"parallel.bucket_mb", Kind::positive_number, 0, {}});
  out.push_back({"parallel.distributed_optimizer", Kind::boolean, 0, {}});
  // A layout object ({"tp", "cp", "dp", …}; the keys it names replace the base's), so one axis can list
  // splits of the same GPUs.
  out.push_back({"parallel", Kind::parallel, 0, schema::parallel_keys});
  for (rt::CommKind k : rt::tuned_kinds())
    out.push_back(
        {"collectives." + std::string(rt::comm_kind_name(k)), Kind::choice, 0, schema::algorithm_choices(k)});
  out.push_back({"collectives.protocol", Kind::choice, 0, schema::protocol_choices()});
  out.push_back({"simulation.network", Kind::choice, 0, schema::networks()});
  out.push_back({"check.dtype", Kind::choice, 0, schema::check_dtypes});
  out.push_back({"check.seed", Kind::unsigned_integer, 0, {}});
  return out;
}

bool is_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A strategy option value is valid if some registered strategy with that option accepts it.
void check_option_value(const std::string& option, const Json& value, const std::string& where,
                        const strategies::Registry& registry) {
  if (!value.is_string() && !value.is_number_integer())
    throw InputError(where, "expected a string or an integer, got " + describe_json(value));
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  std::vector<std::string> choices;
  bool takes_integers = false;
  for (const auto& s : registry.names()) {
    for (const auto& o : registry.find(s)->options) {
      if (o.name != option) continue;
      takes_integers = takes_integers || o.choices.empty();
      for (const auto& c : o.choices)
        if (std::find(choices.begin(), choices.end(), c) == choices.end()) choices.push_back(c);
    }
  }
  if (std::find(choices.begin(), choices.end(), text) != choices.end() || (takes_integers && is_digits(text)))
    return;
  std::string valid = choices.empty() ? "" : join_names(choices);
  if (takes_integers) valid += (valid.empty() ? "" : ", or ") + std::string("a non-negative integer");
  throw InputError(where,
                   "unknown value '" + text + "' for option '" + option + "'; valid choices: " + valid);
}

// A layer option value is valid if some layer strategy with that option accepts it.
void check_layer_option_value(const std::string& option, const Json& value, const std::string& where) {
  if (!value.is_string() && !value.is_boolean())
    throw InputError(where, "expected a string or a boolean, got " + describe_json(value));
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  std::vector<std::string> choices;
  for (const auto& l : strategies::layer_strategies())
    for (const auto& o : l.options)
      if (o.name == option)
        for (const auto& c : o.choices)
          if (std::find(choices.begin(), choices.end(), c) == choices.end()) choices.push_back(c);
  if (std::find(choices.begin(), choices.end(), text) == choices.end())
    throw InputError(where, "unknown value '" + text + "' for layer option '" + option +
                                "'; valid choices: " + join_names(choices));
}

// A parallel object: known keys, each of its type (the per-key checks of the parser run per point).
void check_parallel_value(const Json& value, const std::string& where, const std::vector<std::string>& keys) {
  if (!value.is_object())
    throw InputError(where, "expected a parallel object such as {\"tp\": 2, \"cp\": 4}, got " + describe_json(value));
  for (const auto& item : value.items()) {
    const std::string at = json_child(where, item.key());
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end())
      throw InputError(at, "unknown key '" + item.key() + "'; valid keys: " + join_names(keys));
    if (item.key() == "bucket_mb")
      (void)expect_positive_number(item.value(), at);
    else if (item.key() == "distributed_optimizer")
      (void)expect_bool(item.value(), at);
    else
      (void)expect_integer(item.value(), at, 1);
  }
}

void check_strategy_value(const Json& value, const std::string& where,
                          const std::vector<std::string>& names) {
  if (!value.is_object())
    throw InputError(
        where, "expected a strategy object {\"name\", \"options\", \"degree\"}, got " + describe_json(value));
  for (const auto& item : value.items())
    if (item.key() != "name" && item.key() != "options" && item.key() != "degree")
      throw InputError(json_child(where, item.key()),
                       "unknown key '" + item.key() + "'; valid keys: name, options, degree");
  if (!value.contains("name")) throw InputError(where, "missing required key 'name'");
  (void)expect_choice(value.at("name"), json_child(where, "name"), names);
}

void check_value(const Settable& s, const Json& value, const std::string& where,
                 const strategies::Registry& registry) {
  switch (s.kind) {
    case Kind::integer:
      (void)expect_integer(value, where, s.min);
      return;
    case Kind::unsigned_integer:
      (void)expect_unsigned(value, where);
      return;
    case Kind::positive_number:
      (void)expect_positive_number(value, where);
      return;
    case Kind::probability:
      (void)expect_probability(value, where);
      return;
    case Kind::text:
      (void)expect_string(value, where);
      return;
    case Kind::choice:
      (void)expect_choice(value, where, s.choices);
      return;
    case Kind::boolean:
      (void)expect_bool(value, where);
      return;
    case Kind::option:
      check_option_value(s.path.substr(options_prefix.size()), value, where, registry);
      return;
    case Kind::layer_option:
      check_layer_option_value(s.path.substr(layer_options_prefix.size()), value, where);
      return;
    case Kind::strategy:
      check_strategy_value(value, where, s.choices);
      return;
    case Kind::parallel:
      check_parallel_value(value, where, s.choices);
      return;
    case Kind::mask:  // the kind here; its parameters when the point is parsed (they need seq_len)
      if (value.is_string()) {
        (void)expect_choice(value, where, s.choices);
      } else if (!value.is_object()) {
        throw InputError(where, "expected a mask kind (one of " + join_names(s.choices) +
                                    ") or an object {\"kind\": …}, got " + describe_json(value));
      }
      return;
  }
}

std::size_t point_count(const std::vector<SweepAxis>& axes) {
  std::size_t total = 1;
  for (const auto& axis : axes) {
    if (axis.values.size() > max_sweep_points / total)
      throw InputError("sweep", "the sweep expands to more than " + std::to_string(max_sweep_points) +
                                    " points; split it into smaller sweeps");
    total *= axis.values.size();
  }
  return total;
}

}  // namespace

std::vector<std::string> sweep_paths(const strategies::Registry& registry) {
  std::vector<std::string> out;
  for (const auto& s : settable(registry)) out.push_back(s.path);
  return out;
}

SweepValue sweep_value(const std::string& path, const Json& value) {
  SweepValue v{path, value.dump(), sweep_value_text(value), std::nullopt};
  if (value.is_number()) v.number = value.get<double>();
  return v;
}

std::string sweep_value_text(const Json& value) {
  if (value.is_object() && value.contains("name") && value.at("name").is_string()) {
    // A strategy object: "ring(layout=zigzag)".
    std::string text = value.at("name").get<std::string>(), args;
    if (value.contains("options") && value.at("options").is_object())
      for (const auto& o : value.at("options").items())
        args += (args.empty() ? "" : ", ") + o.key() + "=" + sweep_value_text(o.value());
    if (value.contains("degree"))
      args += (args.empty() ? "" : ", ") + std::string("P=") + value.at("degree").dump();
    return args.empty() ? text : text + "(" + args + ")";
  }
  for (const char* key : {"kind", "distribution"})  // a mask or a length distribution: "kind(…)"
    if (value.is_object() && value.contains(key) && value.at(key).is_string()) {
      std::string args;
      for (const auto& item : value.items())
        if (item.key() != key) args += (args.empty() ? "" : ", ") + item.key() + "=" + sweep_value_text(item.value());
      const std::string name = value.at(key).get<std::string>();
      return args.empty() ? name : name + "(" + args + ")";
    }
  if (value.is_object()) {  // a parallel layout: "tp=2, cp=16"
    std::string text;
    for (const auto& item : value.items())
      text += (text.empty() ? "" : ", ") + item.key() + "=" + sweep_value_text(item.value());
    return text;
  }
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::vector<SweepAxis> parse_sweep_axes(const JsonObject& root, const strategies::Registry& registry) {
  if (!root.has("sweep")) return {};
  const Json& sweep = root.at("sweep");
  if (!sweep.is_object())
    throw InputError("sweep",
                     "expected an object mapping dotted paths to value lists, got " + describe_json(sweep));
  const auto table = settable(registry);
  std::vector<SweepAxis> axes;
  for (const auto& item : sweep.items()) {
    const std::string where = json_child("sweep", item.key());
    auto it =
        std::find_if(table.begin(), table.end(), [&](const Settable& s) { return s.path == item.key(); });
    if (it == table.end())
      throw InputError(where, "'" + item.key() +
                                  "' cannot be swept; settable paths: " + join_names(sweep_paths(registry)));
    const Json& values = item.value();
    if (!values.is_array())
      throw InputError(where, "expected a list of values, got " + describe_json(values));
    if (values.empty()) throw InputError(where, "empty value list; give at least one value");
    SweepAxis axis{item.key(), {}};
    for (std::size_t i = 0; i < values.size(); ++i) {
      check_value(*it, values[i], json_index(where, i), registry);
      axis.values.push_back(sweep_value(item.key(), values[i]));
    }
    axes.push_back(std::move(axis));
  }
  // strategy.degree and parallel.cp give one number: two axes setting it would overwrite each other.
  std::vector<std::string> cp_axes;
  for (const auto& axis : axes) {
    const bool sets = axis.path == "strategy.degree" || axis.path == "parallel.cp" ||
                      std::any_of(axis.values.begin(), axis.values.end(), [&](const SweepValue& v) {
                        const Json j = Json::parse(v.json);
                        return j.is_object() && ((axis.path == "strategy" && j.contains("degree")) ||
                                                 (axis.path == "parallel" && j.contains("cp")));
                      });
    if (sets) cp_axes.push_back(axis.path);
  }
  if (cp_axes.size() > 1)
    throw InputError("sweep", "the axes " + join_names(cp_axes) +
                                  " all set the context-parallel degree (strategy.degree, parallel.cp); sweep it "
                                  "on one axis");
  (void)point_count(axes);
  return axes;
}

Json point_document(const Json& doc, const std::vector<SweepValue>& values) {
  Json out = doc;
  out.erase("sweep");
  for (const auto& v : values) {
    Json* node = &out;
    std::string walked;
    std::size_t start = 0;
    for (std::size_t dot = v.path.find('.'); dot != std::string::npos; dot = v.path.find('.', start)) {
      const std::string key = v.path.substr(start, dot - start);
      walked = json_child(walked, key);
      if (!node->contains(key)) (*node)[key] = Json::object();
      node = &(*node)[key];
      if (!node->is_object()) throw InputError(walked, "expected an object, got " + describe_json(*node));
      start = dot + 1;
    }
    const std::string key = v.path.substr(start);
    const Json value = Json::parse(v.json);
    // strategy.degree and parallel.cp say one thing: the one a point sets replaces the other.
    const bool sets_degree = v.path == "strategy.degree" || (v.path == "strategy" && value.contains("degree"));
    const bool sets_cp = v.path == "parallel.cp" || (v.path == "parallel" && value.contains("cp"));
    if (sets_degree && out.contains("parallel") && out["parallel"].is_object()) out["parallel"].erase("cp");
    if (sets_cp && out.contains("strategy") && out["strategy"].is_object()) out["strategy"].erase("degree");
    const bool merges = v.path == "strategy" || v.path == "parallel";  // a mask replaces the base's
    if (merges && value.is_object() && node->contains(key) && (*node)[key].is_object()) {
      // A strategy object replaces the fields it names; its options replace the base's wholesale
      // (another strategy's options would not apply), and a new name without options drops them.
      Json& target = (*node)[key];
      if (value.contains("name") && !value.contains("options")) target.erase("options");
      for (const auto& item : value.items()) target[item.key()] = item.value();
    } else {
      (*node)[key] = value;
    }
  }
  return out;
}

std::vector<SweepPoint> expand_sweep(const Config& config, const strategies::Registry& registry) {
  if (config.sweep.empty()) return {SweepPoint{{}, config, ""}};
  const auto& axes = config.sweep;
  const std::size_t total = point_count(axes);
  std::vector<SweepPoint> points;
  points.reserve(total);
  std::vector<std::size_t> index(axes.size(), 0);  // an odometer: the last axis turns fastest
  Json base = config_document(config);
  base.erase("sweep");  // once, not per point: the sweep's value lists can be long
  for (std::size_t n = 0; n < total; ++n) {
    SweepPoint p;
    for (std::size_t a = 0; a < axes.size(); ++a) p.values.push_back(axes[a].values[index[a]]);
    try {
      p.config = parse_config(point_document(base, p.values), config.source, registry);
    } catch (const InputError& e) {
      p.error = e.what();
    }
    points.push_back(std::move(p));
    for (std::size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].values.size()) break;
      index[a] = 0;
    }
  }
  return points;
}

}  // namespace spsim::analysis
