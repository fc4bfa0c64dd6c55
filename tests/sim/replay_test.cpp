// The replay rules on hand-made traces, with every time derived from the test GPU and link:
//   GEMM rate 1e14 FLOP/s (peak 2e14 × efficiency 0.5, no launch overhead): 1e9 FLOPs take 10 µs;
//   links 1e11 B/s with 1 µs per hop, GPU-to-GPU two hops, no protocol latency: a message of
//   n = 1e6 bytes takes c = 2 µs + 1e6 / 1e11 s = 12 µs.
#include <doctest/doctest.h>

#include <initializer_list>
#include <stdexcept>

#include "analysis/config/cluster.hpp"
#include "runtime/core/error.hpp"
#include "sim/memory/memory.hpp"
#include "tests/sim/replay_helpers.hpp"

using namespace replay_test;

namespace {

constexpr double kBps = 1e11;
const Time kHop = Time::from_us(1);
constexpr std::uint64_t kMsg = 1000000;          // bytes
constexpr double kMsgUs = 2 + 1e6 / 1e11 * 1e6;  // 12 µs
constexpr double kGemmPerUs = 1e8;               // FLOPs per µs

double us(Time t) {
  return t.us();
}

// Both ranks of P = 2 post pass A then pass B (B in A's launch group if `joined`), then the compute
// ops of `gemm_us` microseconds, then wait for A and B.
std::vector<tr::RankTrace> two_passes_then(std::initializer_list<double> gemm_us, bool joined = false) {
  std::vector<tr::RankTrace> traces;
  for (int r = 0; r < 2; ++r) {
    TraceBuilder b(r, 2);
    const auto a = b.sendrecv(1 - r, 1 - r, kMsg, 0);
    const auto bb = b.sendrecv(1 - r, 1 - r, kMsg, 1, joined);
    for (const double t : gemm_us) b.gemm(t * kGemmPerUs);
    b.wait(a);
    b.wait(bb);
    traces.push_back(b.trace());
  }
  return traces;
}

}  // namespace

TEST_CASE("a compute op takes flops / (peak x efficiency); a memory-bound op bytes / (HBM x efficiency)") {
  TraceBuilder b(0, 1);
  b.gemm(3e9);                    // 3e9 / 1e14 = 30 µs
  b.elementwise(1000000);         // 1e6 B / (2e12 × 0.5) = 1 µs
  b.gemm(5e9, /*skipped=*/true);  // fully masked block: 0
  const auto r = run({b.trace()}, star(1, kBps, kHop));
  REQUIRE(r.ranks[0].compute.size() == 2);
  CHECK(us(r.ranks[0].compute[0].end) == doctest::Approx(30));
  CHECK(us(r.ranks[0].compute[1].start) == doctest::Approx(30));
  CHECK(us(r.makespan) == doctest::Approx(31));
}

TEST_CASE("a ring pass overlapped with compute exposes max(0, comm - compute)") {
  // Every rank: post the pass (sendrecv to r+1 from r−1), compute F, wait for the pass, compute G.
  // On the star each uplink and downlink carries one flow, so the pass takes c = 12 µs everywhere.
  const int p = 4;
  const double g_us = 10;
  for (double f_us : {5.0, 12.0, 20.0}) {
    CAPTURE(f_us);
    std::vector<tr::RankTrace> traces;
    for (int r = 0; r < p; ++r) {
      TraceBuilder b(r, p);
      const auto pass = b.sendrecv((r + 1) % p, (r + p - 1) % p, kMsg, 0);
      b.gemm(f_us * kGemmPerUs);
      b.wait(pass);
      b.gemm(g_us * kGemmPerUs);
      traces.push_back(b.trace());
    }
    const auto res = run(traces, star(p, kBps, kHop));
    for (int r = 0; r < p; ++r) {
      const auto busy = stream_busy(res.ranks[static_cast<std::size_t>(r)]);
      CHECK(busy.comm.us() == doctest::Approx(kMsgUs));
      CHECK(busy.exposed_comm.us() == doctest::Approx(std::max(0.0, kMsgUs - f_us)));
      // The Wait holds G until the pass has ended.
      CHECK(us(res.ranks[static_cast<std::size_t>(r)].compute[1].start) ==
            doctest::Approx(std::max(kMsgUs, f_us)));
    }
    CHECK(us(res.makespan) == doctest::Approx(std::max(kMsgUs, f_us) + g_us));
  }
}

TEST_CASE("compute slows down by the configured factor while a comm kernel runs") {
  // Slowdown s = 0.25: during the pass compute progresses at 1/1.25 of its rate.
  // F = 20 µs > c: by c it has done c/1.25 = 9.6 µs of work; the other 10.4 µs run at full rate:
  // end = 12 + 10.4 = 22.4 µs (= F + c·s/(1+s)). F = 5 µs < c: it ends at 5 × 1.25 = 6.25 µs.
  const int p = 2;
  struct Case {
    double f_us, end_us;
  };
  for (const Case c : {Case{20, 22.4}, Case{5, 6.25}}) {
    CAPTURE(c.f_us);
    std::vector<tr::RankTrace> traces;
    for (int r = 0; r < p; ++r) {
      TraceBuilder b(r, p);
      const auto pass = b.sendrecv(1 - r, 1 - r, kMsg, 0);
      b.gemm(c.f_us * kGemmPerUs);
      b.wait(pass);
      traces.push_back(b.trace());
    }
    const auto res = run(traces, star(p, kBps, kHop), 0.25);
    CHECK(us(res.ranks[0].compute[0].end) == doctest::Approx(c.end_us));
    CHECK(stream_busy(res.ranks[0]).exposed_comm.us() == doctest::Approx(std::max(0.0, kMsgUs - c.end_us)));
  }
}

TEST_CASE("compute ops nothing waits for end without events, at the times their events would give") {
  // Both ranks post the pass (c = 12 µs), then k compute ops of 20/k µs of work, then wait for it;
  // slowdown s = 0.25. With k = 4: G1 runs [0, 6.25] (5 µs at 1/1.25); G2 starts at 6.25 and by 12 has
  // done 5.75/1.25 = 4.6 µs, the last 0.4 µs at full rate: [6.25, 12.4]; G3 [12.4, 17.4]; G4 [17.4,
  // 22.4] (= 20 + c·s/(1+s), as one op of 20 µs). No comm op waits for the compute stream, so its ends
  // are not events: four ops cost the engine as many events as one.
  const int p = 2;
  auto traces = [&](int k) {
    std::vector<tr::RankTrace> out;
    for (int r = 0; r < p; ++r) {
      TraceBuilder b(r, p);
      const auto pass = b.sendrecv(1 - r, 1 - r, kMsg, 0);
      for (int i = 0; i < k; ++i) b.gemm(20.0 / k * kGemmPerUs);
      b.wait(pass);
      out.push_back(b.trace());
    }
    return out;
  };
  const auto one = run(traces(1), star(p, kBps, kHop), 0.25);
  const auto four = run(traces(4), star(p, kBps, kHop), 0.25);
  CHECK(four.events == one.events);
  const double ends[] = {6.25, 12.4, 17.4, 22.4};
  for (const auto& tl : four.ranks) {
    REQUIRE(tl.compute.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(us(tl.compute[i].start) == doctest::Approx(i == 0 ? 0 : ends[i - 1]));
      CHECK(us(tl.compute[i].end) == doctest::Approx(ends[i]));
    }
    CHECK(us(tl.finish) == doctest::Approx(22.4));
    CHECK(tl.busy.compute.us() == doctest::Approx(22.4));
    CHECK(tl.busy.exposed_comm.us() == doctest::Approx(0));
  }
  CHECK(us(four.makespan) == doctest::Approx(22.4));
  CHECK(us(one.ranks[0].compute[0].end) == doctest::Approx(22.4));
}

TEST_CASE("a comm launch reaching the GPU while an earlier compute kernel runs waits for its end") {
  // Both ranks post pass A, then pass B, then compute F = 30 µs, then wait for both. A starts at 0
  // (posted before F is issued) and ends at c = 12 µs. B reaches the GPU then, while F holds the
  // SMs: it starts when F ends, at 30 µs, and ends at 42. Posted in one launch group with A
  // (joins_launch), it runs in A's kernel and follows A at once: [12, 24], and the step ends with F.
  for (const bool joined : {false, true}) {
    CAPTURE(joined);
    const auto res = run(two_passes_then({30}, joined), star(2, kBps, kHop));
    for (const auto& tl : res.ranks) {
      REQUIRE(tl.comm.size() == 2);
      CHECK(us(tl.comm[0].ready) == doctest::Approx(0));
      CHECK(us(tl.comm[0].end) == doctest::Approx(kMsgUs));
      CHECK(us(tl.comm[1].ready) == doctest::Approx(joined ? kMsgUs : 30));
      CHECK(us(tl.comm[1].end) == doctest::Approx(joined ? 2 * kMsgUs : 30 + kMsgUs));
      CHECK(us(tl.compute[0].end) == doctest::Approx(30));
    }
    CHECK(us(res.makespan) == doctest::Approx(joined ? 30 : 30 + kMsgUs));
  }
}

TEST_CASE("a comm launch ready at the instant a compute kernel starts runs beside it") {
  // Both ranks post A, then B, then compute F1 = 12 µs and F2 = 20 µs, then wait. A and F1 both end at
  // c = 12 µs; F2 starts then, and B reaches the GPU at the same instant: a tie, which the comm
  // kernel (launched earlier by the host) wins, so B runs [12, 24] beside F2 [12, 32] whichever of
  // the two ends the engine takes first. Had it waited for F2, the step would end at 44.
  const auto res = run(two_passes_then({kMsgUs, 20}), star(2, kBps, kHop));
  for (const auto& tl : res.ranks) {
    REQUIRE(tl.comm.size() == 2);
    CHECK(us(tl.comm[1].ready) == doctest::Approx(kMsgUs));
    CHECK(us(tl.comm[1].end) == doctest::Approx(2 * kMsgUs));
    CHECK(us(tl.compute[1].start) == doctest::Approx(kMsgUs));
  }
  CHECK(us(res.makespan) == doctest::Approx(kMsgUs + 20));
}

TEST_CASE("a collective starts when every member has posted it") {
  // Rank 0 computes 10 µs before posting; rank 1 posts at once. Ring all-reduce of n on P = 2:
  // 2(P−1)(α + nβ/P) = 2 (2 µs + 5 µs) = 14 µs from the moment both posted (10 µs): both end at 24.
  const int p = 2;
  TraceBuilder r0(0, p), r1(1, p);
  r0.gemm(10 * kGemmPerUs);
  r0.wait(r0.collective(tr::CommKind::all_reduce, kMsg, 0));
  r1.wait(r1.collective(tr::CommKind::all_reduce, kMsg, 0));
  const auto res = run({r0.trace(), r1.trace()}, star(p, kBps, kHop));
  const auto& c0 = res.ranks[0].comm.at(0);
  const auto& c1 = res.ranks[1].comm.at(0);
  CHECK(us(c0.ready) == doctest::Approx(10));  // waits for the compute recorded before it
  CHECK(us(c1.ready) == doctest::Approx(0));
  CHECK(us(c1.start) == doctest::Approx(10));
  CHECK(us(c0.end) == doctest::Approx(24));
  CHECK(us(c1.end) == doctest::Approx(24));
  // Ring all-reduce: each rank sends 2(P−1)/P · n = n bytes.
  CHECK(c0.bytes_sent == doctest::Approx(static_cast<double>(kMsg)));
  // Rank 1's stream is busy (spinning) from 0: all 24 µs exposed; rank 0 exposes the 14 µs.
  CHECK(stream_busy(res.ranks[1]).exposed_comm.us() == doctest::Approx(24));
  CHECK(stream_busy(res.ranks[0]).exposed_comm.us() == doctest::Approx(14));
  CHECK(res.algorithms.at(static_cast<std::size_t>(c0.algorithm)) == "ring");
}

TEST_CASE("strided chunks: the stream packs before joining a collective and unpacks after it") {
  // Staging copy of n = 1e6 B: n read + n written at HBM 2e12 B/s × efficiency 0.5 = 2 µs. Ring
  // reduce-scatter / all-gather of n on P = 2: (P−1)(α + nβ/P) = 2 µs + 5 µs = 7 µs. Rank 0 packs
  // (2 µs), rank 1 has contiguous chunks: the reduce-scatter starts at 2 and ends at 9 on both. The
  // all-gather unpacks on rank 1 only: it starts at 9, the exchange ends at 16, rank 1 at 18.
  const int p = 2;
  constexpr double kCopyUs = 2, kExchangeUs = 7;
  TraceBuilder r0(0, p), r1(1, p);
  r0.wait(r0.collective(tr::CommKind::reduce_scatter, kMsg, 0, /*pack=*/true));
  r1.wait(r1.collective(tr::CommKind::reduce_scatter, kMsg, 0));
  r0.wait(r0.collective(tr::CommKind::all_gather, kMsg, 1));
  r1.wait(r1.collective(tr::CommKind::all_gather, kMsg, 1, false, /*unpack=*/true));
  const auto res = run({r0.trace(), r1.trace()}, star(p, kBps, kHop));
  for (int r = 0; r < p; ++r) {
    CAPTURE(r);
    const auto& rs = res.ranks[static_cast<std::size_t>(r)].comm.at(0);
    CHECK(us(rs.ready) == doctest::Approx(0));
    CHECK(us(rs.start) == doctest::Approx(kCopyUs));
    CHECK(us(rs.end) == doctest::Approx(kCopyUs + kExchangeUs));
    const auto& ag = res.ranks[static_cast<std::size_t>(r)].comm.at(1);
    CHECK(us(ag.start) == doctest::Approx(kCopyUs + kExchangeUs));
    CHECK(us(ag.end) == doctest::Approx(kCopyUs + 2 * kExchangeUs + (r == 1 ? kCopyUs : 0)));
  }
  CHECK(us(res.makespan) == doctest::Approx(2 * kCopyUs + 2 * kExchangeUs));
}

TEST_CASE("sends are eager and match receives by channel and ordinal") {
  const int p = 2;
  SUBCASE("the send waits for the compute before it; the receiver gets it 12 µs later") {
    TraceBuilder r0(0, p), r1(1, p);
    r0.gemm(10 * kGemmPerUs);
    r0.send(1, kMsg);
    r1.recv(0, kMsg);
    const auto res = run({r0.trace(), r1.trace()}, star(p, kBps, kHop));
    CHECK(us(res.ranks[1].comm.at(0).end) == doctest::Approx(10 + kMsgUs));
    CHECK(res.ranks[0].comm.at(0).bytes_sent == doctest::Approx(1e6));
  }
  SUBCASE("a message that arrived before the receive was posted completes it at once") {
    TraceBuilder r0(0, p), r1(1, p);
    r0.send(1, kMsg);
    r1.gemm(20 * kGemmPerUs);  // the recv is ready at 20 µs; the bytes arrived at 12 µs
    r1.recv(0, kMsg);
    const auto res = run({r0.trace(), r1.trace()}, star(p, kBps, kHop));
    CHECK(us(res.ranks[1].comm.at(0).ready) == doctest::Approx(20));
    CHECK(us(res.ranks[1].comm.at(0).end) == doctest::Approx(20));
  }
  SUBCASE("send-then-recv on both sides does not deadlock") {
    TraceBuilder r0(0, p), r1(1, p);
    r0.send(1, kMsg);
    r0.recv(1, kMsg);
    r1.send(0, kMsg);
    r1.recv(0, kMsg);
    const auto res = run({r0.trace(), r1.trace()}, star(p, kBps, kHop));
    // Each stream: its send ends at 12 µs, when the peer's message has also arrived, so the recv
    // (ready at 12) ends at once.
    CHECK(us(res.makespan) == doctest::Approx(kMsgUs));
  }
  SUBCASE("the second message on a channel matches the second receive") {
    TraceBuilder r0(0, p), r1(1, p);
    r0.send(1, kMsg, 0);
    r0.send(1, 2 * kMsg, 1);  // 2 µs + 20 µs, after the first: ends at 12 + 22 = 34
    r1.recv(0, kMsg, 0);
    r1.recv(0, 2 * kMsg, 1);
    const auto res = run({r0.trace(), r1.trace()}, star(p, kBps, kHop));
    CHECK(us(res.ranks[1].comm.at(0).end) == doctest::Approx(12));
    CHECK(us(res.ranks[1].comm.at(1).end) == doctest::Approx(34));
  }
}

TEST_CASE("traces that cannot finish are reported, not hung") {
  const int p = 2;
  SUBCASE("a receive with no send") {
    TraceBuilder r0(0, p), r1(1, p);
    r0.recv(1, kMsg);
    CHECK_THROWS_AS((void)run({r0.trace(), r1.trace()}, star(p, kBps, kHop)), rt::RuntimeError);
  }
  SUBCASE("a collective only one member posts") {
    TraceBuilder r0(0, p), r1(1, p);
    r0.collective(tr::CommKind::all_reduce, kMsg, 0);
    CHECK_THROWS_AS((void)run({r0.trace(), r1.trace()}, star(p, kBps, kHop)), rt::RuntimeError);
  }
  SUBCASE("members disagree on the size") {
    TraceBuilder r0(0, p), r1(1, p);
    r0.collective(tr::CommKind::all_reduce, kMsg, 0);
    r1.collective(tr::CommKind::all_reduce, 2 * kMsg, 0);
    CHECK_THROWS_AS((void)run({r0.trace(), r1.trace()}, star(p, kBps, kHop)), rt::RuntimeError);
  }
  SUBCASE("a wait for a record that is not an earlier comm op") {
    // (Once comm ops have ended, the replay keeps only those in flight, so a wait for an older record
    // is taken as one for an ended op; these are the cases it can still tell.)
    TraceBuilder before(0, 1), itself(0, 1), between(0, 1);
    const auto g = before.gemm(kGemmPerUs);
    before.wait(g);  // a compute op, and no comm op has run
    CHECK_THROWS_AS((void)run({before.trace()}, star(1, kBps, kHop)), rt::RuntimeError);
    itself.gemm(kGemmPerUs);
    itself.wait(1);  // the wait itself
    CHECK_THROWS_AS((void)run({itself.trace()}, star(1, kBps, kHop)), rt::RuntimeError);
    const auto c = between.collective(tr::CommKind::all_reduce, kMsg, 0);
    between.gemm(kGemmPerUs);
    between.collective(tr::CommKind::all_reduce, kMsg, 1);
    between.wait(c + 1);  // the compute op between two comm ops in flight
    CHECK_THROWS_AS((void)run({between.trace()}, star(1, kBps, kHop)), rt::RuntimeError);
  }
  SUBCASE("more ranks than GPUs") {
    TraceBuilder r0(0, 2), r1(1, 2);
    CHECK_THROWS_AS((void)run({r0.trace(), r1.trace()}, star(1, kBps, kHop)), std::invalid_argument);
  }
}

TEST_CASE("phases span their ops; memory peaks follow the allocation order") {
  TraceBuilder b(0, 1);
  b.alloc(1, 100);
  b.phase("forward", true);
  b.gemm(10 * kGemmPerUs);
  b.alloc(2, 50);  // live 150: the peak
  b.free(1, 100);
  b.phase("forward", false);
  b.phase("backward", true);
  b.gemm(5 * kGemmPerUs);
  b.alloc(3, 80);  // live 130
  b.phase("backward", false);
  const auto res = run({b.trace()}, star(1, kBps, kHop));
  const auto& spans = res.ranks[0].phases;
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].name == "forward");
  CHECK(us(spans[0].end) == doctest::Approx(10));
  CHECK(us(spans[1].start) == doctest::Approx(10));
  CHECK(us(spans[1].end) == doctest::Approx(15));
  const auto mem = memory_profile(b.trace(), res.ranks[0].issue);
  CHECK(mem.peak_bytes == 150);
  CHECK(mem.end_bytes == 130);
  CHECK(mem.curve.size() == 4);
  CHECK(mem.oom(149));
  CHECK_FALSE(mem.oom(150));
}

namespace {

// The phases of one rank from its records and op timings, the way the summary once computed them
// after the replay: walk the records, open and close phases at their markers, and widen every phase
// open at an op's record by the op's span.
std::vector<PhaseSpan> phases_from_records(const tr::RankTrace& trace, const RankTimeline& tl) {
  struct Open {
    std::string name;
    Time start = Time::max(), end{};
  };
  std::vector<Open> open;
  std::vector<PhaseSpan> out;
  std::size_t ci = 0, mi = 0;
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    Time s = Time::max(), e{};
    if (ci < tl.compute.size() && tl.compute[ci].record == i) {
      s = tl.compute[ci].start, e = tl.compute[ci].end, ++ci;
    } else if (mi < tl.comm.size() && tl.comm[mi].record == i) {
      s = tl.comm[mi].ready, e = tl.comm[mi].end, ++mi;
    } else if (const auto* b = std::get_if<tr::PhaseBegin>(&trace.records[i])) {
      open.push_back({std::string(b->name)});
    } else if (std::holds_alternative<tr::PhaseEnd>(trace.records[i]) && !open.empty()) {
      if (open.back().start != Time::max()) out.push_back({open.back().name, open.back().start, open.back().end});
      open.pop_back();
    }
    if (s == Time::max()) continue;
    for (auto& o : open) o.start = std::min(o.start, s), o.end = std::max(o.end, e);
  }
  return out;
}

}  // namespace

TEST_CASE("the summaries kept as the replay goes equal those computed from the op timings afterwards") {
  // Two ranks with nested phases, compute overlapping a collective and p2p, an empty phase, a phase
  // left open, and slowed compute while communicating; the second rank starts later.
  constexpr int p = 2;
  std::vector<tr::RankTrace> traces;
  for (int r = 0; r < p; ++r) {
    TraceBuilder b(r, p);
    b.phase("step", true);
    b.phase("forward", true);
    b.gemm((5 + 7 * r) * kGemmPerUs);
    const auto ar = b.collective(tr::CommKind::all_reduce, 4 * kMsg, 0);
    b.gemm(30 * kGemmPerUs);  // overlaps the all-reduce
    b.phase("empty", true);
    b.phase("empty", false);
    b.wait(ar);
    b.phase("forward", false);
    b.phase("backward", true);
    const auto x = b.sendrecv(1 - r, 1 - r, kMsg, 0);
    b.elementwise(1000000);
    b.gemm(20 * kGemmPerUs);  // still running when the sendrecv ends
    b.wait(x);
    b.gemm(2 * kGemmPerUs);
    b.phase("backward", false);
    b.phase("step", false);
    b.phase("open", true);
    b.gemm(kGemmPerUs);
    traces.push_back(b.trace());
  }
  const auto timed = run(traces, star(p, kBps, kHop), 0.25);
  const auto lean = run(traces, star(p, kBps, kHop), 0.25, NetworkMode::flow, "ring", false);
  for (int r = 0; r < p; ++r) {
    CAPTURE(r);
    const auto& tl = timed.ranks[static_cast<std::size_t>(r)];
    const auto& ln = lean.ranks[static_cast<std::size_t>(r)];
    const StreamBusy busy = stream_busy(tl);
    CHECK(tl.busy.compute == busy.compute);
    CHECK(tl.busy.comm == busy.comm);
    CHECK(tl.busy.exposed_comm == busy.exposed_comm);
    CHECK(tl.busy.exposed_comm > Time{});  // the all-reduce outlasts the compute it overlaps
    const auto phases = phases_from_records(traces[static_cast<std::size_t>(r)], tl);
    REQUIRE(tl.phases.size() == phases.size());
    REQUIRE(phases.size() == 3);  // forward, backward, step: "empty" has no op, "open" never closes
    for (std::size_t k = 0; k < phases.size(); ++k) {
      CHECK(tl.phases[k].name == phases[k].name);
      CHECK(tl.phases[k].start == phases[k].start);
      CHECK(tl.phases[k].end == phases[k].end);
    }
    // Without op timings: nothing per op, the same summaries.
    CHECK(ln.compute.empty());
    CHECK(ln.comm.empty());
    CHECK(ln.busy.compute == tl.busy.compute);
    CHECK(ln.busy.exposed_comm == tl.busy.exposed_comm);
    CHECK(ln.finish == tl.finish);
    REQUIRE(ln.phases.size() == tl.phases.size());
    for (std::size_t k = 0; k < phases.size(); ++k) CHECK(ln.phases[k].end == tl.phases[k].end);
    REQUIRE(ln.comm_totals.size() == 2);
    double bytes = 0;
    for (const auto& c : tl.comm) bytes += c.bytes_sent;
    CHECK(ln.bytes_sent == bytes);
    CHECK(ln.algorithms.size() == 2);  // the ring all-reduce and the p2p sendrecv
  }
}

TEST_CASE("a collective of every rank with nothing in flight is folded to one node, with the same timings") {
  // 3 dgx-h100 nodes, 24 ranks. Each rank computes for a rank-dependent time, all-gathers (world,
  // nothing in flight: folded), sends eagerly to its successor and reduce-scatters at once (the
  // sends are still in flight: not folded), then all-reduces. Folded or not, every comm op's
  // ready/start/end and bytes agree to the picosecond; folding shows as fewer simulator events.
  const int p = 24;
  std::vector<tr::RankTrace> traces;
  for (int r = 0; r < p; ++r) {
    TraceBuilder b(r, p);
    b.gemm((1 + r % 5) * kGemmPerUs);
    b.wait(b.collective(tr::CommKind::all_gather, 24'000'000, 0));
    b.send((r + 1) % p, 50'000'000);
    b.recv((r + p - 1) % p, 50'000'000);
    if (r == 0) b.send(1, 2'000'000'000, 1);
    b.wait(b.collective(tr::CommKind::reduce_scatter, 24'000'000, 1));
    b.wait(b.collective(tr::CommKind::all_reduce, 24'000'000, 2));
    if (r == 1) b.wait(b.recv(0, 2'000'000'000, 1));
    traces.push_back(b.trace());
  }
  const ClusterConfig cc = spsim::analysis::preset_cluster("dgx-h100", 3);
  const Cluster cluster(cc);
  const ComputeModel model(cc.gpu, rt::DType::bf16);
  ReplayOptions o;
  o.algorithm = {"ring", "ring", "ring", "pairwise"};
  o.protocol = Protocol::simple;
  const auto folded = replay(traces, cluster, NetworkMode::flow, model, o);
  o.fold_nodes = false;
  const auto full = replay(traces, cluster, NetworkMode::flow, model, o);
  CHECK(folded.makespan == full.makespan);
  CHECK(folded.events < full.events);
  for (int r = 0; r < p; ++r) {
    CAPTURE(r);
    const auto& a = folded.ranks[static_cast<std::size_t>(r)].comm;
    const auto& b = full.ranks[static_cast<std::size_t>(r)].comm;
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].ready == b[i].ready);
      CHECK(a[i].start == b[i].start);
      CHECK(a[i].end == b[i].end);
      CHECK(a[i].bytes_sent == doctest::Approx(b[i].bytes_sent).epsilon(1e-12));
    }
  }
  // Ring all-gather of n: each rank sends (P-1)/P n.
  CHECK(folded.ranks[5].comm[0].bytes_sent == doctest::Approx(23.0 / 24 * 24e6).epsilon(1e-12));
}

TEST_CASE("fetching each event's state ahead changes nothing") {
  // Eight ranks on a ring, each step a sendrecv overlapped with compute of rank-dependent length (so
  // events fall at times of their own as well as shared ones), phases, an all-reduce, and compute
  // slowed while communicating (its end moves): the same timelines, event for event, with the
  // engine's touch-ahead on (the rank's and flow's touch functions run) and off.
  constexpr int p = 8;
  std::vector<tr::RankTrace> traces;
  for (int r = 0; r < p; ++r) {
    TraceBuilder b(r, p);
    b.phase("step", true);
    for (int s = 0; s < 6; ++s) {
      const auto x = b.sendrecv((r + 1) % p, (r + p - 1) % p, kMsg * static_cast<std::uint64_t>(1 + s % 3),
                                static_cast<std::uint64_t>(s));
      b.gemm((3 + (r * s) % 5) * kGemmPerUs);
      b.elementwise(500000);
      b.wait(x);
    }
    const auto ar = b.collective(tr::CommKind::all_reduce, 4 * kMsg, 0);
    b.gemm(7 * kGemmPerUs);
    b.wait(ar);
    b.phase("step", false);
    traces.push_back(b.trace());
  }
  const Cluster cluster(star(p, kBps, kHop));
  const ComputeModel model(star(p, kBps, kHop).gpu, rt::DType::bf16);
  ReplayOptions o;
  o.protocol = Protocol::simple;
  o.compute_slowdown = 0.25;
  o.touch_ahead = false;
  const ReplayResult off = replay(traces, cluster, NetworkMode::flow, model, o);
  o.touch_ahead = true;
  const ReplayResult on = replay(traces, cluster, NetworkMode::flow, model, o);
  CHECK(on.events == off.events);
  CHECK(on.makespan == off.makespan);
  for (int r = 0; r < p; ++r) {
    CAPTURE(r);
    const auto& a = on.ranks[static_cast<std::size_t>(r)];
    const auto& b = off.ranks[static_cast<std::size_t>(r)];
    REQUIRE(a.compute.size() == b.compute.size());
    for (std::size_t k = 0; k < a.compute.size(); ++k) CHECK(a.compute[k].end == b.compute[k].end);
    REQUIRE(a.comm.size() == b.comm.size());
    for (std::size_t k = 0; k < a.comm.size(); ++k) CHECK(a.comm[k].end == b.comm[k].end);
    CHECK(a.busy.exposed_comm == b.busy.exposed_comm);
    REQUIRE(a.phases.size() == 1);
    CHECK(a.phases[0].end == b.phases[0].end);
  }
}
