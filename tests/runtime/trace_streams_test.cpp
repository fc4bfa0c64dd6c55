// TraceStreams: the records a streamed rank hands over, in any pull order, are trace_ranks' records;
// errors reach the consumer; a consumer that stops early leaves no rank running.
#include "runtime/trace/trace_streams.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/trace/trace_ranks.hpp"

using namespace spsim::rt;
using namespace spsim::rt::trace;

namespace {

// A small SPMD program with every kind of record: phases, allocations, compute, a split group, a
// collective with its wait, and ring passes of a few steps.
void program(Device& dev, Comm& comm) {
  PhaseScope phase(dev, "forward");
  std::vector<int> color(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) color[static_cast<std::size_t>(r)] = r % 2;
  auto half = comm.split(color);
  Tensor q = dev.empty({2, 8, 4}), k = dev.empty({2, 8, 4}), next = dev.empty({2, 8, 4});
  Tensor s = dev.empty({2, 8, 8});
  half->all_reduce(q).wait();
  for (int step = 0; step < 3 + comm.rank(); ++step) {
    Work pass = comm.ring_exchange(k, next);
    dev.gemm(q, k, s, Trans::N, Trans::T);
    dev.scale(s, 0.5);
    pass.wait();
    std::swap(k, next);
  }
}

// One line per record: every field the replay reads (storage ids aside, which count per process).
std::string describe(const Record& r) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ComputeOp>)
          return "compute " + std::string(x.name) + " " + std::to_string(x.flops) + " " +
                 std::to_string(x.bytes());
        else if constexpr (std::is_same_v<T, CommOp>)
          return "comm " + std::string(comm_kind_name(x.kind)) + " " + std::to_string(x.group) + " " +
                 std::to_string(x.bytes) + " " + std::to_string(x.dst) + " " + std::to_string(x.src) + " " +
                 std::to_string(x.seq) + " " + std::to_string(x.recv_seq);
        else if constexpr (std::is_same_v<T, Wait>)
          return "wait " + std::to_string(x.comm_record);
        else if constexpr (std::is_same_v<T, Alloc>)
          return "alloc " + std::to_string(x.bytes);
        else if constexpr (std::is_same_v<T, Free>)
          return "free " + std::to_string(x.bytes);
        else if constexpr (std::is_same_v<T, PhaseBegin>)
          return "begin " + std::string(x.name);
        else
          return "end " + std::string(x.name);
      },
      r);
}

std::vector<std::string> describe_all(const std::vector<Record>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(describe(r));
  return out;
}

}  // namespace

TEST_SUITE("trace_streams") {
  // `ahead`: a producer thread records each rank's next chunk beside the consumer (fiber builds).
  TEST_CASE("streamed ranks hand over trace_ranks' records, whatever the chunk, pull order or producer") {
    constexpr int p = 4;
    const auto whole = trace_ranks(p, DType::bf16, program);
    for (const bool ahead : {false, true})
      for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{1000}}) {
        CAPTURE(chunk);
        CAPTURE(ahead);
        TraceStreams streams(p, DType::bf16, program, chunk, ahead);
        std::vector<std::vector<Record>> got(p);
        std::vector<bool> done(p, false);
        // Pull the ranks unevenly: rank r is asked r + 1 times per round.
        for (int round = 0, left = p; left > 0; ++round)
          for (int r = 0; r < p; ++r)
            for (int k = 0; k <= r && !done[static_cast<std::size_t>(r)]; ++k) {
              auto& out = got[static_cast<std::size_t>(r)];
              const std::size_t before = out.size();
              if (!streams.pull(r, out)) {
                done[static_cast<std::size_t>(r)] = true;
                --left;
              } else {
                CHECK(out.size() > before);
                CHECK(out.size() - before <= chunk);
              }
            }
        for (int r = 0; r < p; ++r) {
          CAPTURE(r);
          CHECK(describe_all(got[static_cast<std::size_t>(r)]) ==
                describe_all(whole[static_cast<std::size_t>(r)].records));
          std::vector<std::uint64_t> ids;
          for (const auto& g : streams.groups(r)) ids.push_back(g.id);
          std::vector<std::uint64_t> want;
          for (const auto& g : whole[static_cast<std::size_t>(r)].groups) want.push_back(g.id);
          CHECK(ids == want);
          CHECK_FALSE(streams.pull(r, got[static_cast<std::size_t>(r)]));  // finished stays finished
        }
      }
  }

  TEST_CASE("folded memory: no Alloc or Free handed over, the peak as a walk over the whole trace finds") {
    constexpr int p = 4;
    const auto whole = trace_ranks(p, DType::bf16, program);
    for (const bool ahead : {false, true}) {
      CAPTURE(ahead);
      TraceStreams streams(p, DType::bf16, program, 3, ahead);
      streams.fold_memory();
      for (int r = 0; r < p; ++r) {
        CAPTURE(r);
        std::vector<Record> got;
        while (streams.pull(r, got)) {
        }
        // The whole trace less its Alloc and Free, a Wait's index counting the records that remain.
        std::vector<std::string> want;
        std::vector<std::size_t> kept_index;  // per whole-trace record: its index among those kept
        for (const auto& rec : whole[static_cast<std::size_t>(r)].records) {
          kept_index.push_back(want.size());
          if (std::holds_alternative<Alloc>(rec) || std::holds_alternative<Free>(rec)) continue;
          const auto* w = std::get_if<Wait>(&rec);
          want.push_back(w ? describe(Wait{kept_index.at(w->comm_record)}) : describe(rec));
        }
        CHECK(want.size() < whole[static_cast<std::size_t>(r)].records.size());
        CHECK(describe_all(got) == want);
        const std::uint64_t peak = peak_live_bytes(whole[static_cast<std::size_t>(r)]);
        CHECK(peak > 0);
        CHECK(streams.peak_bytes(r) == peak);
      }
    }
  }

  TEST_CASE("a Wait's record index counts from the rank's first record across pulls") {
    TraceStreams streams(2, DType::bf16, program, 2);
    std::vector<Record> all, part;
    while (streams.pull(1, part)) {
      for (auto& r : part) all.push_back(std::move(r));
      part.clear();
    }
    bool waits = false;
    for (const auto& r : all)
      if (const auto* w = std::get_if<Wait>(&r)) {
        waits = true;
        REQUIRE(w->comm_record < all.size());
        CHECK(std::holds_alternative<CommOp>(all[w->comm_record]));
      }
    CHECK(waits);
  }

  TEST_CASE("an exception of a rank's program reaches the consumer at that rank's pull") {
    for (const bool ahead : {false, true}) {
      CAPTURE(ahead);
      TraceStreams streams(
          3, DType::bf16,
          [](Device& dev, Comm& comm) {
            Tensor x = dev.empty({4});
            if (comm.rank() == 1) throw RuntimeError("rank 1 fails");
            dev.scale(x, 2.0);
          },
          2048, ahead);
      std::vector<Record> out;
      while (streams.pull(0, out)) {
      }
      CHECK_THROWS_WITH_AS(streams.pull(1, out), "rank 1 fails", RuntimeError);
      CHECK_THROWS_AS(streams.pull(1, out), RuntimeError);  // and at every later pull
      out.clear();
      while (streams.pull(2, out)) {
      }
      CHECK_FALSE(out.empty());
    }
  }

  TEST_CASE("streams dropped half-read run their ranks to the end and join") {
    for (const bool ahead : {false, true}) {
      CAPTURE(ahead);
      int started = 0, ended = 0;
      {
        TraceStreams streams(
            8, DType::bf16,
            [&](Device& dev, Comm& comm) {
              ++started;
              program(dev, comm);
              ++ended;
            },
            1, ahead);
        std::vector<Record> out;
        for (int r = 0; r < 8; r += 2) CHECK(streams.pull(r, out));  // started, paused after one record
      }
      // Every started rank finished. Without a producer only the four pulled ranks started; with one,
      // the first pull asks for every rank's first chunk, so the producer may have started the others.
      CHECK(ended == started);
      if (!ahead) CHECK(started == 4);
    }
    CHECK_THROWS_AS(TraceStreams(0, DType::bf16, program), RuntimeError);
    CHECK_THROWS_AS(TraceStreams(2, DType::bf16, program, 0), RuntimeError);
  }

}  // TEST_SUITE
