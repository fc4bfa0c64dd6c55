// Threads backend sub-groups (split, nested split) and failure handling (abort, deadlock detection).
#include <doctest/doctest.h>

#include <stdexcept>
#include <thread>

#include "tests/runtime/threads_test_util.hpp"

namespace spsim::test {
namespace {

constexpr int max_world = 9;

// all_reduce of value(world rank, i) on `comm`; returns the result.
rt::Tensor all_reduce_values(rt::Comm& comm, int world_rank, std::int64_t n) {
  rt::Tensor t = make_tensor<double>({n}, [&](std::int64_t i) { return value(world_rank, i); });
  comm.all_reduce(t).wait();
  return t;
}

}  // namespace

TEST_SUITE("threads") {
  TEST_CASE("split by rank mod 3: ranks, sizes and collectives of each sub-group") {
    constexpr std::int64_t n = 7;
    for (int p = 1; p <= max_world; ++p) {
      CAPTURE(p);
      std::vector<int> colors;
      for (int r = 0; r < p; ++r) colors.push_back(r % 3);
      std::vector<std::vector<double>> sums(static_cast<std::size_t>(p)),
          gathered(static_cast<std::size_t>(p));
      std::vector<std::pair<int, int>> rank_size(static_cast<std::size_t>(p));
      rt::run_ranks(p, [&](rt::Comm& world) {
        const int r = world.rank();
        auto sub = world.split(colors);
        rank_size[static_cast<std::size_t>(r)] = {sub->rank(), sub->size()};
        sums[static_cast<std::size_t>(r)] = values_of<double>(all_reduce_values(*sub, r, n));
        // World collectives still work between and after sub-group ones.
        world.barrier();
        const rt::Tensor in = make_tensor<double>({1, n}, [&](std::int64_t i) { return value(r, i); });
        rt::Tensor out = rt::make_host_tensor({sub->size(), n}, rt::DType::f64);
        sub->all_gather(in, out, 0).wait();
        gathered[static_cast<std::size_t>(r)] = values_of<double>(out);
        (void)all_reduce_values(world, r, n);
      });
      for (int r = 0; r < p; ++r) {
        CAPTURE(r);
        // Color c = r mod 3 has members c, c+3, ..., m = ceil((P - c) / 3) of them; r is the
        // (r / 3)-th; the member sum is m c + 3 m (m - 1) / 2.
        const int c = r % 3;
        const int m = (p - c + 2) / 3;
        CHECK(rank_size[static_cast<std::size_t>(r)] == std::pair{r / 3, m});
        const double member_sum = m * c + 3.0 * m * (m - 1) / 2;
        CHECK(mismatch({sums[static_cast<std::size_t>(r)]}, n, [&](int, std::int64_t i) {
                return 1000.0 * member_sum + m * static_cast<double>(i);
              }) == "");
        // all_gather concatenates in parent-rank order: row t comes from world rank c + 3t.
        CHECK(mismatch({gathered[static_cast<std::size_t>(r)]}, m * n, [&](int, std::int64_t k) {
                return value(c + 3 * static_cast<int>(k / n), k % n);
              }) == "");
      }
    }
  }

  TEST_CASE("nested split (USP-style 2-D grid) with collectives on both levels") {
    constexpr std::int64_t n = 5;
    for (int p = 1; p <= max_world; ++p) {
      CAPTURE(p);
      // Level 1: contiguous halves (color r < P/2 ? 0 : 1). Level 2: parity of the rank in the half.
      std::vector<int> halves;
      for (int r = 0; r < p; ++r) halves.push_back(r < p / 2 ? 0 : 1);
      std::vector<std::vector<double>> inner(static_cast<std::size_t>(p)), outer(static_cast<std::size_t>(p));
      rt::run_ranks(p, [&](rt::Comm& world) {
        const int r = world.rank();
        auto half = world.split(halves);
        std::vector<int> parity;
        for (int q = 0; q < half->size(); ++q) parity.push_back(q % 2);
        auto leaf = half->split(parity);
        inner[static_cast<std::size_t>(r)] = values_of<double>(all_reduce_values(*leaf, r, n));
        leaf->barrier();
        outer[static_cast<std::size_t>(r)] = values_of<double>(all_reduce_values(*half, r, n));
      });
      // Reference: the members of each group listed by brute force from the two color rules.
      auto half_of = [&](int r) { return r < p / 2 ? 0 : 1; };
      auto index_in_half = [&](int r) { return half_of(r) == 0 ? r : r - p / 2; };
      for (int r = 0; r < p; ++r) {
        CAPTURE(r);
        double leaf_sum = 0, half_sum = 0;
        int leaf_n = 0, half_n = 0;
        for (int q = 0; q < p; ++q) {
          if (half_of(q) != half_of(r)) continue;
          half_sum += q;
          ++half_n;
          if (index_in_half(q) % 2 == index_in_half(r) % 2) {
            leaf_sum += q;
            ++leaf_n;
          }
        }
        // all_reduce of 1000 q + i over members q: 1000 * (sum of members) + (member count) * i.
        CHECK(mismatch({inner[static_cast<std::size_t>(r)]}, n, [&](int, std::int64_t i) {
                return 1000.0 * leaf_sum + leaf_n * static_cast<double>(i);
              }) == "");
        CHECK(mismatch({outer[static_cast<std::size_t>(r)]}, n, [&](int, std::int64_t i) {
                return 1000.0 * half_sum + half_n * static_cast<double>(i);
              }) == "");
      }
    }
  }

  TEST_CASE("split rejects color vectors of the wrong length or that differ between ranks") {
    auto length = thrown_by([] { rt::run_ranks(3, [](rt::Comm& comm) { (void)comm.split({0, 1}); }); });
    CHECK(length.type == "RuntimeError");
    CHECK(length.says("2 colors for a group of 3"));
    auto differ = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        (void)comm.split(comm.rank() == 0 ? std::vector{0, 0} : std::vector{0, 1});
      });
    });
    CHECK(differ.type == "RuntimeError");
    CHECK(differ.says("different color vector"));
  }

  TEST_CASE("a rank that throws aborts the others: blocked in recv, in a collective, in a sub-group") {
    for (const int p : {2, 5, 9}) {
      CAPTURE(p);
      // Everyone else waits for a message from rank 1, which throws instead of sending.
      auto in_recv = thrown_by([p] {
        rt::run_ranks(p, [](rt::Comm& comm) {
          if (comm.rank() == 1) throw std::runtime_error("boom on rank 1");
          rt::Tensor t = rt::make_host_tensor({4}, rt::DType::f32);
          comm.recv(t, 1).wait();
        });
      });
      CHECK(in_recv.type == "runtime_error");  // the original exception, not the abort it caused
      CHECK(in_recv.what == "boom on rank 1");
      // Everyone else is inside an all_reduce.
      auto in_collective = thrown_by([p] {
        rt::run_ranks(p, [p](rt::Comm& comm) {
          if (comm.rank() == p - 1) throw std::runtime_error("boom in collective");
          rt::Tensor t = rt::make_host_tensor({1000}, rt::DType::f64);
          comm.all_reduce(t).wait();
        });
      });
      CHECK(in_collective.type == "runtime_error");
      CHECK(in_collective.what == "boom in collective");
      // Ranks wait in a sub-group's barrier; the thrower is in the other sub-group.
      auto in_subgroup = thrown_by([p] {
        rt::run_ranks(p, [p](rt::Comm& comm) {
          std::vector<int> colors(static_cast<std::size_t>(p), 0);
          colors[0] = 1;
          auto sub = comm.split(colors);
          if (comm.rank() == 0) throw std::runtime_error("boom in other group");
          sub->barrier();
          rt::Tensor t = rt::make_host_tensor({3}, rt::DType::f64);
          comm.recv(t, 0).wait();
        });
      });
      CHECK(in_subgroup.type == "runtime_error");
      CHECK(in_subgroup.what == "boom in other group");
    }
  }

  TEST_CASE("a deadlock is detected and reported instead of hanging") {
    for (const int p : {1, 2, 4, 9}) {
      CAPTURE(p);
      // Every rank waits for its right neighbour, which never sends.
      auto cycle = thrown_by([p] {
        rt::run_ranks(p, [p](rt::Comm& comm) {
          rt::Tensor t = rt::make_host_tensor({2}, rt::DType::f32);
          comm.recv(t, (comm.rank() + 1) % p, 7).wait();
        });
      });
      CHECK(cycle.type == "GroupAborted");
      CHECK(cycle.says("deadlock"));
      CHECK(cycle.says("(tag 7)"));
    }
    // Rank 0 returns without sending; rank 1 waits for it in vain.
    auto finished = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        if (comm.rank() == 0) return;
        rt::Tensor t = rt::make_host_tensor({2}, rt::DType::f32);
        comm.recv(t, 0).wait();
      });
    });
    CHECK(finished.type == "GroupAborted");
    CHECK(finished.says("rank 0 has finished"));
    // A receive posted and never waited for blocks nobody.
    auto unwaited = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        rt::Tensor t = rt::make_host_tensor({2}, rt::DType::f32);
        rt::Work w = comm.recv(t, 1 - comm.rank(), 3);
      });
    });
    CHECK(unwaited.type == "none");
  }

  TEST_CASE("ThreadsWorld: explicit abort wakes a rank blocked on its own thread") {
    const rt::ThreadsWorld world(2);
    auto c1 = world.comm(1);
    CHECK(c1->backend() == "threads");
    CHECK(c1->rank() == 1);
    CHECK(c1->size() == 2);
    CHECK(thrown_by([&] { (void)world.comm(2); }).type == "RuntimeError");
    CHECK(thrown_by([] { rt::ThreadsWorld bad(0); }).type == "RuntimeError");
    Thrown waited;
    std::thread rank1([&] {
      waited = thrown_by([&] {
        rt::Tensor t = rt::make_host_tensor({1}, rt::DType::f64);
        c1->recv(t, 0).wait();
      });
    });
    world.abort("stopped by the test");
    rank1.join();
    CHECK(world.aborted());
    CHECK(waited.type == "GroupAborted");
    CHECK(waited.says("stopped by the test"));
  }
}

}  // namespace spsim::test
