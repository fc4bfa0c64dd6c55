// TraceComm and trace_ranks: recorded bytes, waits, p2p matching, split groups, many ranks.
#include "runtime/trace/trace_comm.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "runtime/trace/trace_device.hpp"
#include "runtime/trace/trace_ranks.hpp"

using namespace spsim::rt;
using namespace spsim::rt::trace;

namespace {

template <class T>
std::vector<T> all_of_kind(const std::vector<Record>& records) {
  std::vector<T> out;
  for (const Record& r : records)
    if (const auto* x = std::get_if<T>(&r)) out.push_back(*x);
  return out;
}

// CommOp::joins_launch of each comm op of the trace, in record order.
std::vector<bool> joins_launch(const RankTrace& t) {
  std::vector<bool> out;
  for (const CommOp& op : all_of_kind<CommOp>(t.records)) out.push_back(op.joins_launch);
  return out;
}

}  // namespace

TEST_CASE("collectives record the full per-rank buffer size as bytes") {
  constexpr int p = 4;
  const auto traces = trace_ranks(p, DType::f32, [](Device& dev, Comm& comm) {
    Tensor x = dev.empty({4, 8});          // 4*8*4 = 128 B
    Tensor gathered = dev.empty({16, 8});  // P chunks of x
    comm.all_gather(x, gathered).wait();
    Tensor part = dev.empty({1, 8});
    comm.reduce_scatter(x, part).wait();
    comm.all_reduce(x).wait();
    Tensor swapped = dev.empty({1, 32});
    comm.all_to_all(x, swapped, 0, 1).wait();
  });
  REQUIRE(traces.size() == p);
  for (int r = 0; r < p; ++r) {
    CAPTURE(r);
    const auto ops = all_of_kind<CommOp>(traces[static_cast<std::size_t>(r)].records);
    REQUIRE(ops.size() == 4);
    // all_gather: the gathered output, P x 128 B = [16, 8] f32 = 512 B (nccl-tests' size).
    CHECK(ops[0].kind == CommKind::all_gather);
    CHECK(ops[0].bytes == 16 * 8 * 4);
    // reduce_scatter: the full input (P chunks of [1, 8]); all_reduce and all_to_all: the tensor.
    CHECK(ops[1].kind == CommKind::reduce_scatter);
    CHECK(ops[1].bytes == 4 * 8 * 4);
    CHECK(ops[2].bytes == 4 * 8 * 4);
    CHECK(ops[3].kind == CommKind::all_to_all);
    CHECK(ops[3].bytes == 4 * 8 * 4);
    const std::vector<int> world{0, 1, 2, 3};
    for (std::uint64_t i = 0; i < ops.size(); ++i) {
      CHECK(ops[i].seq == i);  // ordinal within the world group
      CHECK(ops[i].group == group_id(world));
    }
  }
}

TEST_CASE("strided chunks record the staging copies every backend makes; contiguous ones none") {
  constexpr int p = 2;
  const auto traces = trace_ranks(p, DType::f32, [](Device& dev, Comm& comm) {
    Tensor x = dev.empty({3, 4, 8});           // 384 B
    Tensor rs_out = dev.empty({3, 2, 8});      // dim 1: chunks strided (3 rows before it)
    comm.reduce_scatter(x, rs_out, 1).wait();  // pack 384 B
    Tensor ag_out = dev.empty({3, 8, 8});      // 768 B
    comm.all_gather(x, ag_out, 1).wait();      // unpack 768 B
    Tensor a2a_out = dev.empty({6, 2, 8});     // split dim 1 (strided), concat dim 0 (contiguous)
    comm.all_to_all(x, a2a_out, 1, 0).wait();  // pack only
    Tensor lead = dev.empty({1, 4, 8});        // extent 1 before dim 1: contiguous
    Tensor lead_out = dev.empty({1, 2, 8});
    comm.reduce_scatter(lead, lead_out, 1).wait();  // nothing
    Tensor flat_out = dev.empty({6, 4, 8});
    comm.all_gather(x, flat_out, 0).wait();  // dim 0: nothing
  });
  for (const auto& t : traces) {
    const auto ops = all_of_kind<CommOp>(t.records);
    REQUIRE(ops.size() == 5);
    CHECK(ops[0].pack_bytes() == 3 * 4 * 8 * 4);
    CHECK(ops[0].unpack_bytes() == 0);
    CHECK(ops[1].pack_bytes() == 0);
    CHECK(ops[1].unpack_bytes() == 3 * 8 * 8 * 4);
    CHECK(ops[2].pack_bytes() == 3 * 4 * 8 * 4);
    CHECK(ops[2].unpack_bytes() == 0);
    for (std::size_t i : {3, 4}) {
      CHECK(ops[i].pack_bytes() == 0);
      CHECK(ops[i].unpack_bytes() == 0);
    }
  }
  CHECK(chunks_strided({3, 4, 8}, 1, 2));
  CHECK_FALSE(chunks_strided({3, 4, 8}, 1, 1));  // one chunk is the whole tensor
  CHECK_FALSE(chunks_strided({1, 1, 8}, 2, 4));
  CHECK(chunks_strided({1, 2, 8}, -1, 4));  // negative dims count from the end
}

TEST_CASE("collective shape errors throw") {
  Recorder rec(1, DType::f32);
  TraceDevice dev(DType::f32, rec);
  TraceComm comm(1, 4, rec);
  Tensor x = dev.empty({6, 8});
  Tensor out = dev.empty({24, 8});
  CHECK_THROWS_AS((void)comm.reduce_scatter(x, out), RuntimeError);  // 6 rows not divisible by 4
  Tensor wrong = dev.empty({24, 4});
  CHECK_THROWS_AS((void)comm.all_gather(x, wrong), RuntimeError);  // must be [24, 8]
  CHECK((comm.all_gather(x, out)).pending());
  CHECK_THROWS_AS((void)comm.all_to_all(x, out, 0, 0), RuntimeError);
  CHECK_THROWS_AS((void)comm.send(x, 4), RuntimeError);  // ranks are 0..3
  CHECK_THROWS_AS((void)comm.split({0, 0, 1}), RuntimeError);
  CHECK_THROWS_AS(TraceComm(4, 4, rec), RuntimeError);
}

TEST_CASE("Work::wait records a dependency on the comm op; an unwaited Work records none") {
  Recorder rec(0, DType::bf16);
  TraceDevice dev(DType::bf16, rec);
  TraceComm comm(0, 2, rec);
  Tensor a = dev.empty({4, 4}), b = dev.empty({4, 4}), c = dev.empty({4, 4});
  Work w = comm.ring_exchange(a, b);
  const std::size_t comm_index = rec.records().size() - 1;
  REQUIRE(std::holds_alternative<CommOp>(rec.records()[comm_index]));
  dev.gemm(a, a, c, Trans::N, Trans::N);  // overlaps: recorded before the wait
  w.wait();
  w.wait();                               // idempotent: one Wait
  dev.gemm(b, a, c, Trans::N, Trans::N);  // depends on the exchange
  Work unwaited = comm.all_reduce(c);

  const auto& r = rec.records();
  REQUIRE(r.size() == comm_index + 5);
  CHECK(std::holds_alternative<ComputeOp>(r[comm_index + 1]));
  REQUIRE(std::holds_alternative<Wait>(r[comm_index + 2]));
  CHECK(std::get<Wait>(r[comm_index + 2]).comm_record == comm_index);
  CHECK(std::holds_alternative<ComputeOp>(r[comm_index + 3]));
  CHECK(std::holds_alternative<CommOp>(r[comm_index + 4]));
  CHECK(all_of_kind<Wait>(r).size() == 1);
  CHECK(unwaited.pending());

  SUBCASE("barrier blocks: a barrier op and a wait on it") {
    comm.barrier();
    REQUIRE(std::holds_alternative<Wait>(r.back()));
    const std::size_t waited = std::get<Wait>(r.back()).comm_record;
    CHECK(std::get<CommOp>(r[waited]).kind == CommKind::barrier);
  }
}

TEST_CASE("point-to-point: every send matches exactly one receive by (group, src, dst, tag, seq)") {
  constexpr int p = 5;
  const auto traces = trace_ranks(p, DType::f32, [](Device& dev, Comm& comm) {
    Tensor a = dev.empty({3}), b = dev.empty({3});
    for (int step = 0; step < 3; ++step) comm.ring_exchange(a, b, 7).wait();
    // Rank 0 sends one extra message to rank 2 (tag 1), with plain send/recv.
    if (comm.rank() == 0) comm.send(a, 2, 1).wait();
    if (comm.rank() == 2) comm.recv(b, 0, 1).wait();
  });
  using Key = std::tuple<GroupId, int, int, int, std::uint64_t>;  // group, src, dst, tag, seq
  std::map<Key, std::uint64_t> sends, recvs;                      // -> bytes
  for (const RankTrace& t : traces)
    for (const CommOp& op : all_of_kind<CommOp>(t.records)) {
      if (op.kind == CommKind::send || op.kind == CommKind::sendrecv) {
        CHECK(sends.emplace(Key{op.group, t.rank, op.dst, op.tag, op.seq}, op.bytes).second);
      }
      if (op.kind == CommKind::recv || op.kind == CommKind::sendrecv) {
        CHECK(recvs.emplace(Key{op.group, op.src, t.rank, op.tag, op.recv_seq}, op.recv_bytes).second);
      }
    }
  CHECK(sends == recvs);
  // 3 ring passes on each of the 5 ranks, plus the extra message.
  CHECK(sends.size() == 3 * p + 1);
  // Rank 1's ring passes go to 2 and come from 0, sequence numbers 0, 1, 2.
  const auto ops = all_of_kind<CommOp>(traces[1].records);
  REQUIRE(ops.size() == 3);
  for (std::uint64_t i = 0; i < 3; ++i) {
    CHECK(ops[i].kind == CommKind::sendrecv);
    CHECK(ops[i].dst == 2);
    CHECK(ops[i].src == 0);
    CHECK(ops[i].seq == i);
    CHECK(ops[i].recv_seq == i);
    CHECK(ops[i].bytes == 3 * 4);
  }
}

TEST_CASE("a launch group marks every op after its first as joining that launch") {
  const auto traces = trace_ranks(2, DType::f32, [](Device& dev, Comm& comm) {
    Tensor a = dev.empty({4}), b = dev.empty({4}), c = dev.empty({4}), d = dev.empty({4});
    std::vector<Work> w;
    w.push_back(comm.ring_exchange(a, b));  // alone
    {
      LaunchGroup launch(comm);
      w.push_back(comm.ring_exchange(a, b, 1));
      w.push_back(comm.ring_exchange(c, d, 2));
      w.push_back(comm.ring_exchange(c, d, 3));
    }
    w.push_back(comm.ring_exchange(c, d, 4));  // after the group: alone again
    for (auto& x : w) x.wait();
  });
  for (const auto& t : traces) CHECK(joins_launch(t) == std::vector<bool>{false, false, true, true, false});
}

TEST_CASE("launch groups nest (the outer one decides), and an exception inside one closes it") {
  const auto traces = trace_ranks(2, DType::f32, [](Device& dev, Comm& comm) {
    Tensor a = dev.empty({4}), b = dev.empty({4});
    std::vector<Work> w;
    {
      LaunchGroup outer(comm);
      w.push_back(comm.ring_exchange(a, b, 1));
      {
        LaunchGroup inner(comm);  // ring attention's K/V pair inside a packed step
        w.push_back(comm.ring_exchange(a, b, 2));
        w.push_back(comm.ring_exchange(a, b, 3));
      }
      w.push_back(comm.ring_exchange(a, b, 4));  // still the outer launch
    }
    try {
      LaunchGroup g(comm);
      w.push_back(comm.ring_exchange(a, b, 5));
      throw std::runtime_error("inside the group");
    } catch (const std::runtime_error&) {
    }
    w.push_back(comm.ring_exchange(a, b, 6));  // the group closed on unwinding: alone
    for (auto& x : w) x.wait();
  });
  for (const auto& t : traces)
    CHECK(joins_launch(t) == std::vector<bool>{false, true, true, true, false, false});
}

TEST_CASE("every rank's trace lists the world group, one list shared by all, with the id of its members") {
  constexpr int p = 16;
  const auto traces = trace_ranks(p, DType::bf16, [](Device& dev, Comm& comm) {
    Tensor x = dev.empty({8});
    comm.all_reduce(x).wait();
  });
  std::vector<int> world(p);
  for (int r = 0; r < p; ++r) world[static_cast<std::size_t>(r)] = r;
  for (const RankTrace& t : traces) {
    CAPTURE(t.rank);
    REQUIRE(t.groups.size() == 1);
    CHECK(t.groups[0].members.list() == world);
    CHECK(t.groups[0].id == group_id(world));
    CHECK(&t.groups[0].members.list() == &traces[0].groups[0].members.list());  // shared, not copied
  }
}

TEST_CASE("group members compare by value, shared or not; a moved-from list is empty") {
  const GroupMembers a{0, 2, 4}, b(std::vector<int>{0, 2, 4}), c{0, 2};
  CHECK(a == b);
  CHECK_FALSE(a == c);
  CHECK(a == GroupMembers(a));
  CHECK(GroupMembers() == GroupMembers(std::vector<int>{}));
  CHECK(a.size() == 3);
  CHECK(a[1] == 2);
  GroupMembers moved = a;
  const GroupMembers taken = std::move(moved);
  CHECK(taken == a);
  CHECK(moved.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty, as a vector's is
  CHECK(moved == GroupMembers());
}

TEST_CASE("split: every rank derives the same group ids and members locally") {
  constexpr int p = 8;
  // Two splits: blocks of 4 (a "ulysses" group) and stride 4 (a "ring" group), as USP does.
  std::vector<int> block(p), stride(p);
  for (int r = 0; r < p; ++r) {
    block[static_cast<std::size_t>(r)] = r / 4;
    stride[static_cast<std::size_t>(r)] = r % 4;
  }
  const auto traces = trace_ranks(p, DType::bf16, [&](Device& dev, Comm& comm) {
    auto inner = comm.split(block);
    auto outer = comm.split(stride);
    CHECK(inner->size() == 4);
    CHECK(inner->rank() == comm.rank() % 4);
    CHECK(outer->size() == 2);
    CHECK(outer->rank() == comm.rank() / 4);
    Tensor x = dev.empty({8});
    inner->all_reduce(x).wait();
    inner->all_reduce(x).wait();
    outer->all_reduce(x).wait();
    Tensor y = dev.empty({8});
    outer->ring_exchange(x, y).wait();
  });
  const std::vector<Group> groups = merge_groups(traces);
  // world + 2 blocks + 4 strides, all distinct ids.
  REQUIRE(groups.size() == 1 + 2 + 4);
  std::set<std::vector<int>> members;
  for (const Group& g : groups) {
    CHECK(g.id == group_id(g.members));
    members.insert(g.members);
  }
  CHECK(members == std::set<std::vector<int>>{
                       {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3}, {4, 5, 6, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}});
  for (const RankTrace& t : traces) {
    CAPTURE(t.rank);
    const auto ops = all_of_kind<CommOp>(t.records);
    REQUIRE(ops.size() == 4);
    const int base = t.rank / 4 * 4, partner = (t.rank + 4) % 8;
    CHECK(ops[0].group == group_id(std::vector<int>{base, base + 1, base + 2, base + 3}));
    CHECK(ops[0].seq == 0);
    CHECK(ops[1].seq == 1);  // the second collective of the same group
    const std::vector<int> pair{std::min(t.rank, partner), std::max(t.rank, partner)};
    CHECK(ops[2].group == group_id(pair));
    CHECK(ops[2].seq == 0);        // sequence numbers count per group
    CHECK(ops[3].dst == partner);  // p2p peers are world ranks
    CHECK(ops[3].src == partner);
  }
}

TEST_CASE("merge_groups rejects ranks that disagree on a group") {
  std::vector<RankTrace> traces(2);
  traces[0].rank = 0;
  traces[1].rank = 1;
  traces[0].groups = {Group{42, {0, 1}}};
  traces[1].groups = {Group{42, {0}}};
  CHECK_THROWS_AS((void)merge_groups(traces), RuntimeError);
  traces[1].groups = {};  // rank 1 is a member but does not know the group
  CHECK_THROWS_AS((void)merge_groups(traces), RuntimeError);
  traces[1].groups = {Group{42, {0, 1}}};
  CHECK(merge_groups(traces).size() == 1);
}

TEST_CASE("trace_ranks handles 1024 ranks of a ~100-op strategy") {
  constexpr int p = 1024, steps = 20;
  const auto traces = trace_ranks(p, DType::bf16, [](Device& dev, Comm& comm) {
    PhaseScope phase(dev, "forward");
    Tensor q = dev.empty({4, 16, 8}), k = dev.empty({4, 16, 8}), next = dev.empty({4, 16, 8});
    Tensor s = dev.empty({4, 16, 16});
    for (int step = 0; step < steps; ++step) {
      Work pass = comm.ring_exchange(k, next);
      dev.gemm(q, k, s, Trans::N, Trans::T);
      dev.scale(s, 0.5);
      pass.wait();
      std::swap(k, next);
    }
  });
  REQUIRE(traces.size() == p);
  for (const RankTrace& t : traces) {
    // 2 phase marks, 4 allocs and 4 frees, and per step one comm op, two compute ops, one wait.
    REQUIRE(t.records.size() == 2 + 8 + 4 * steps);
    CHECK(all_of_kind<CommOp>(t.records).back().seq == steps - 1);
  }
  CHECK(traces.back().rank == p - 1);
  CHECK_THROWS_AS((void)trace_ranks(0, DType::bf16, [](Device&, Comm&) {}), RuntimeError);
}
