// Chrome trace JSON, written as a stream (a large replay has millions of events).
#include "analysis/simulate/chrome_trace.hpp"

#include <cstdio>
#include <fstream>
#include <variant>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace {

using sim::Time;

std::string us(Time t) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6f", t.us());
  return buf;
}

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Names come from our own vocabularies, but quote them properly anyway.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}
  void event(const std::string& body) {
    out_ << (first_ ? "\n" : ",\n") << "{" << body << "}";
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

std::string head(const char* ph, int pid, int tid, const std::string& name) {
  return "\"ph\":\"" + std::string(ph) + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"name\":" + json_string(name);
}

std::string span(Time start, Time end) {
  return ",\"ts\":" + us(start) + ",\"dur\":" + us(end - start);
}

void metadata(EventWriter& w, int rank, const std::string& gpu) {
  w.event(head("M", rank, 0, "process_name") +
          ",\"args\":{\"name\":" + json_string("rank " + std::to_string(rank) + " (" + gpu + ")") + "}");
  w.event(head("M", rank, 0, "process_sort_index") + ",\"args\":{\"sort_index\":" + std::to_string(rank) +
          "}");
  const char* threads[] = {"compute", "comm", "phases"};
  for (int t = 0; t < 3; ++t)
    w.event(head("M", rank, t, "thread_name") + ",\"args\":{\"name\":\"" + threads[t] + "\"}");
}

void compute_events(EventWriter& w, int rank, const rt::trace::RankTrace& trace,
                    const sim::RankTimeline& tl) {
  for (const auto& c : tl.compute) {
    const auto& op = std::get<rt::trace::ComputeOp>(trace.records[c.record]);
    w.event(head("X", rank, 0, std::string(op.name)) + ",\"cat\":\"compute\"" + span(c.start, c.end) +
            ",\"args\":{\"class\":" + json_string(rt::op_class_name(op.op_class)) +
            ",\"flops\":" + num(op.flops) + ",\"bytes\":" + std::to_string(op.bytes()) +
            ",\"record\":" + std::to_string(c.record) + "}");
  }
}

void comm_events(EventWriter& w, int rank, const rt::trace::RankTrace& trace, const sim::RankTimeline& tl,
                 const sim::ReplayResult& replay) {
  for (const auto& c : tl.comm) {
    const auto& op = std::get<rt::trace::CommOp>(trace.records[c.record]);
    const std::string algo =
        c.algorithm >= 0 ? replay.algorithms[static_cast<std::size_t>(c.algorithm)] : "p2p";
    w.event(head("X", rank, 1, std::string(rt::trace::comm_kind_name(op.kind))) + ",\"cat\":\"comm\"" +
            span(c.ready, c.end) + ",\"args\":{\"bytes\":" + std::to_string(op.bytes + op.recv_bytes) +
            ",\"bytes_sent\":" + num(c.bytes_sent) + ",\"wait_us\":" + us(c.start - c.ready) +
            ",\"algorithm\":" + json_string(algo) + ",\"protocol\":" +
            json_string(sim::protocol_name(c.protocol)) + ",\"record\":" + std::to_string(c.record) + "}");
  }
}

void phase_events(EventWriter& w, int rank, const sim::RankTimeline& tl) {
  for (const auto& p : tl.phases)
    w.event(head("X", rank, 2, p.name) + ",\"cat\":\"phase\"" + span(p.start, p.end));
}

void memory_events(EventWriter& w, int rank, const sim::MemoryProfile& m) {
  for (std::size_t i = 0; i < m.curve.size(); ++i) {
    // One sample per instant: the last of several allocations at the same time.
    if (i + 1 < m.curve.size() && m.curve[i + 1].at == m.curve[i].at) continue;
    w.event(head("C", rank, 0, "memory") + ",\"ts\":" + us(m.curve[i].at) +
            ",\"args\":{\"MiB\":" + num(static_cast<double>(m.curve[i].live) / (1024.0 * 1024.0)) + "}");
  }
}

}  // namespace

void write_chrome_trace(const std::filesystem::path& path, const std::string& where,
                        std::span<const rt::trace::RankTrace> traces, const sim::ReplayResult& replay,
                        const sim::Cluster& cluster, std::span<const sim::MemoryProfile> memory) {
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
  }
  std::ofstream out(path);
  if (!out) throw InputError(where, "cannot write the Chrome trace to '" + path.string() + "'");
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  EventWriter w(out);
  for (std::size_t r = 0; r < traces.size(); ++r) {
    const int rank = static_cast<int>(r);
    metadata(w, rank, cluster.device(cluster.gpus()[r]).name);
    compute_events(w, rank, traces[r], replay.ranks[r]);
    comm_events(w, rank, traces[r], replay.ranks[r], replay);
    phase_events(w, rank, replay.ranks[r]);
    if (r < memory.size()) memory_events(w, rank, memory[r]);
  }
  out << "\n]}\n";
  if (!out) throw InputError(where, "error while writing the Chrome trace to '" + path.string() + "'");
}

}  // namespace spsim::analysis
