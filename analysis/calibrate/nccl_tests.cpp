// nccl-tests table parser and per-collective α-β fits.
#include "analysis/calibrate/nccl_tests.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "analysis/config/cluster.hpp"
#include "runtime/core/error.hpp"
#include "sim/collectives/fitted.hpp"

namespace spsim::analysis {

namespace {

struct TestName {
  const char* test;
  rt::CommKind kind;
};
constexpr TestName kTests[] = {{"all_reduce_perf", rt::CommKind::all_reduce},
                               {"all_gather_perf", rt::CommKind::all_gather},
                               {"reduce_scatter_perf", rt::CommKind::reduce_scatter},
                               {"alltoall_perf", rt::CommKind::all_to_all},
                               {"sendrecv_perf", rt::CommKind::sendrecv}};
constexpr const char* kTestChoices =
    "all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf";

std::vector<std::string> tokens_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// Drops mpirun's "[1,0]<stdout>:" tag.
std::string strip_mpi_prefix(const std::string& line) {
  static const std::regex prefix(R"(^\s*\[\d+,\d+\]<std(out|err)>:)");
  return std::regex_replace(line, prefix, "", std::regex_constants::format_first_only);
}

bool is_integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  void line(const std::string& raw, int number) {
    const auto tok = tokens_of(strip_mpi_prefix(raw));
    if (tok.empty()) return;
    if (tok[0].rfind('#', 0) == 0) return comment(tok);
    if (is_integer(tok[0]) && !columns_.empty()) row(tok, number);
  }

  NcclTestsTable finish() {
    if (columns_.empty())
      throw InputError(source_,
                       "no nccl-tests table found (no '#  size  count  type ... time  algbw  busbw' header)");
    if (table_.rows.empty()) throw InputError(source_, "the nccl-tests table has no rows");
    table_.source = source_;
    resolve_kind();
    resolve_ranks();
    return table_;
  }

 private:
  void comment(std::vector<std::string> tok) {
    if (tok[0] == "#")
      tok.erase(tok.begin());
    else
      tok[0].erase(0, 1);
    if (tok.size() >= 4 && tok[0] == "Collective" && tok[1] == "test" && tok[2] == "starting:")
      table_.test = tok[3];
    // "#  Rank  N ..." device lines; a rank of ten or more digits is no real job's, so not a rank line.
    if (tok.size() >= 2 && tok[0] == "Rank" && is_integer(tok[1]) && tok[1].size() < 10)
      ranks_seen_ = std::max(ranks_seen_, std::stoi(tok[1]) + 1);
    const bool header = std::find(tok.begin(), tok.end(), "size") != tok.end() &&
                        std::find(tok.begin(), tok.end(), "time") != tok.end() &&
                        std::find(tok.begin(), tok.end(), "busbw") != tok.end();
    if (header) set_columns(tok);
  }

  void set_columns(const std::vector<std::string>& names) {
    columns_ = names;
    auto find = [&](const std::string& n, int which) {
      int seen = 0;
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == n && seen++ == which) return static_cast<int>(i);
      return -1;
    };
    size_ = find("size", 0), count_ = find("count", 0), type_ = find("type", 0);
    time_ = find("time", 0), algbw_ = find("algbw", 0), busbw_ = find("busbw", 0), in_time_ = find("time", 1);
    if (algbw_ < 0) throw InputError(source_, "the table header has no 'algbw' column");
  }

  double number(const std::vector<std::string>& tok, int col, int line) const {
    if (col < 0) return 0;
    const std::string& s = tok[static_cast<std::size_t>(col)];
    try {
      std::size_t used = 0;
      const double v = std::stod(s, &used);
      if (used == s.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    throw InputError(source_, "line " + std::to_string(line) + ": '" + s + "' in column '" +
                                  columns_[static_cast<std::size_t>(col)] + "' is not a number");
  }

  void row(const std::vector<std::string>& tok, int line) {
    if (tok.size() != columns_.size())
      throw InputError(source_, "line " + std::to_string(line) + ": expected " +
                                    std::to_string(columns_.size()) + " columns as in the header, got " +
                                    std::to_string(tok.size()));
    NcclTestsRow r;
    r.size_bytes = number(tok, size_, line);
    r.count = number(tok, count_, line);
    r.type = type_ >= 0 ? tok[static_cast<std::size_t>(type_)] : "";
    r.time_us = number(tok, time_, line);
    r.algbw_GBps = number(tok, algbw_, line);
    r.busbw_GBps = number(tok, busbw_, line);
    r.in_place_time_us = number(tok, in_time_, line);
    table_.rows.push_back(r);
  }

  void resolve_kind() {
    if (table_.test.empty()) {
      const std::string file = std::filesystem::path(source_).filename().string();
      for (const auto& t : kTests)
        if (file.find(t.test) != std::string::npos) table_.test = t.test;
    }
    if (table_.test.empty())
      throw InputError(source_,
                       "cannot tell which collective was measured: no '# Collective test starting:' line "
                       "and the file name contains none of " +
                           std::string(kTestChoices));
    for (const auto& t : kTests)
      if (table_.test == t.test) return void(table_.kind = t.kind);
    throw InputError(source_,
                     "unsupported nccl-tests test '" + table_.test + "'; valid choices: " + kTestChoices);
  }

  // From the Rank lines, else from busbw / algbw = f_K(P) on the row with the largest algbw.
  void resolve_ranks() {
    if (ranks_seen_ > 0) return void(table_.ranks = ranks_seen_);
    const auto best =
        std::max_element(table_.rows.begin(), table_.rows.end(),
                         [](const auto& a, const auto& b) { return a.algbw_GBps < b.algbw_GBps; });
    const double f = best->algbw_GBps > 0 ? best->busbw_GBps / best->algbw_GBps : 0;
    double p = 0;
    if (table_.kind == rt::CommKind::all_reduce && f > 0 && f < 2)
      p = 2 / (2 - f);
    else if (table_.kind != rt::CommKind::sendrecv && f > 0 && f < 1)
      p = 1 / (1 - f);
    if (!(p >= 1.5))
      throw InputError(
          source_,
          "cannot tell the number of ranks: the '#  Rank N ...' device lines are missing" +
              std::string(table_.kind == rt::CommKind::sendrecv ? " (sendrecv's busbw equals its algbw)"
                                                                : " and busbw/algbw gives no rank count"));
    table_.ranks = static_cast<int>(std::lround(p));
  }

  std::string source_;
  NcclTestsTable table_;
  std::vector<std::string> columns_;
  int size_ = -1, count_ = -1, type_ = -1, time_ = -1, algbw_ = -1, busbw_ = -1, in_time_ = -1;
  int ranks_seen_ = 0;
};

}  // namespace

NcclTestsTable parse_nccl_tests(const std::string& text, const std::string& source) {
  Parser parser(source);
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) parser.line(line, ++number);
  return parser.finish();
}

NcclTestsTable load_nccl_tests(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string(), "cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_nccl_tests(text.str(), path.string());
}

NcclTestsFit fit_nccl_tests(const NcclTestsTable& table) {
  const double f = rt::bus_bandwidth_factor(table.kind, table.ranks);
  std::vector<double> x, t;
  for (const auto& r : table.rows)
    if (r.time_us > 0) x.push_back(r.size_bytes * f), t.push_back(r.time_us * 1e-6);
  NcclTestsFit fit;
  fit.kind = table.kind;
  fit.ranks = table.ranks;
  fit.source = table.source;
  fit.line = fit_line(x, t, table.source);
  if (!(fit.line.beta > 0))
    throw InputError(table.source, "the times do not grow with the size: no bandwidth can be fitted");
  fit.latency_s = fit.line.alpha;
  fit.busbw_Bps = 1.0 / fit.line.beta;
  return fit;
}

namespace {

nlohmann::ordered_json fits_json(const std::vector<NcclTestsFit>& fits) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& f : fits) {
    const std::string kind = std::string(rt::comm_kind_name(f.kind));
    if (out.contains(kind))
      throw InputError(f.source, "a second measurement of " + kind + " (from " +
                                     out[kind]["source"].get<std::string>() +
                                     "); give one file per collective");
    out[kind] = {{"latency_us", f.latency_s * 1e6},
                 {"busbw_GBps", f.busbw_Bps / 1e9},
                 {"ranks", f.ranks},
                 {"source", f.source},
                 {"residual", f.line.residual}};
  }
  return out;
}

nlohmann::ordered_json cluster_file(const std::vector<NcclTestsFit>& fits, const std::string& preset) {
  nlohmann::ordered_json out;
  if (!preset.empty()) out["preset"] = preset;
  out["collective_fits"] = fits_json(fits);
  if (!preset.empty()) (void)parse_cluster_text(out.dump(), "--cluster");
  return out;
}

}  // namespace

std::string nccl_tests_cluster_text(const std::vector<NcclTestsFit>& fits, const std::string& preset) {
  return cluster_file(fits, preset).dump(2) + "\n";
}

std::string nccl_tests_json(const std::vector<NcclTestsFit>& fits, const std::string& preset) {
  return nlohmann::ordered_json{
             {"schema_version", 1}, {"command", "calibrate"}, {"cluster", cluster_file(fits, preset)}}
             .dump(2) +
         "\n";
}

}  // namespace spsim::analysis
