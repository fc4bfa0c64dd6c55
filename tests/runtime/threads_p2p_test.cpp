// Threads backend point-to-point messages and barrier: ring passes, sendrecv, tags, posting order.
#include <doctest/doctest.h>

#include <algorithm>
#include <utility>

#include "tests/runtime/threads_test_util.hpp"

namespace spsim::test {
namespace {

constexpr int max_world = 9;
constexpr std::int64_t chunk_sizes[] = {0, 1, 7, 1000};

[[nodiscard]] int mod(int a, int p) {
  return ((a % p) + p) % p;
}

}  // namespace

TEST_SUITE("threads") {
  TEST_CASE_TEMPLATE("ring_exchange: after k passes rank r holds rank r-k's buffer", T, float, double) {
    for (int p = 1; p <= max_world; ++p) {
      for (const std::int64_t c : chunk_sizes) {
        CAPTURE(p);
        CAPTURE(c);
        // held[r][k] = what rank r holds after k passes, k = 0..P (P passes bring every buffer home).
        std::vector<std::vector<std::vector<double>>> held(static_cast<std::size_t>(p));
        rt::run_ranks(p, [&](rt::Comm& comm) {
          rt::Tensor cur = make_tensor<T>({c}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor next = rt::make_host_tensor({c}, rt::dtype_of<T>());
          auto& mine = held[static_cast<std::size_t>(comm.rank())];
          mine.push_back(values_of<T>(cur));
          for (int step = 0; step < p; ++step) {
            rt::Work pass = comm.ring_exchange(cur, next);
            pass.wait();
            std::swap(cur, next);
            mine.push_back(values_of<T>(cur));
          }
        });
        for (int k = 0; k <= p; ++k) {
          CAPTURE(k);
          std::vector<std::vector<double>> after_k;
          for (int r = 0; r < p; ++r)
            after_k.push_back(held[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)]);
          // Each pass moves every buffer from rank r to rank r+1.
          CHECK(mismatch(after_k, c, [&](int r, std::int64_t i) { return value(mod(r - k, p), i); }) == "");
        }
      }
    }
  }

  TEST_CASE("sendrecv with different source and destination") {
    for (int p = 1; p <= max_world; ++p) {
      for (const std::int64_t c : chunk_sizes) {
        CAPTURE(p);
        CAPTURE(c);
        // Send to r+2, receive from r-2.
        auto got = on_ranks<double>(p, [&](rt::Comm& comm) {
          const rt::Tensor out =
              make_tensor<double>({c}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor in = rt::make_host_tensor({c}, rt::DType::f64);
          comm.sendrecv(out, mod(comm.rank() + 2, p), in, mod(comm.rank() - 2, p), 5).wait();
          return in;
        });
        CHECK(mismatch(got, c, [&](int r, std::int64_t i) { return value(mod(r - 2, p), i); }) == "");
      }
    }
  }

  TEST_CASE("tags select messages; one tag is first in, first out") {
    for (int p = 2; p <= max_world; ++p) {
      CAPTURE(p);
      constexpr std::int64_t n = 7;
      // Rank 0 sends every other rank q: tag 1 -> value(q, i), tag 2 -> value(q + 10, i), then two
      // messages on tag 3: value(q + 20, i) and value(q + 30, i).
      std::vector<std::vector<std::vector<double>>> got(static_cast<std::size_t>(p));
      std::vector<char> pending_after_wait(static_cast<std::size_t>(p), 0);
      rt::run_ranks(p, [&](rt::Comm& comm) {
        const int r = comm.rank();
        if (r == 0) {
          for (int q = 1; q < p; ++q)
            for (const auto& [tag, base] :
                 {std::pair{1, 0}, std::pair{2, 10}, std::pair{3, 20}, std::pair{3, 30}})
              (void)comm.send(make_tensor<float>({n}, [&](std::int64_t i) { return value(q + base, i); }), q,
                              tag);
          return;
        }
        std::vector<rt::Tensor> t;
        for (int k = 0; k < 4; ++k) t.push_back(rt::make_host_tensor({n}, rt::DType::f32));
        // Post in a different order than sent, wait in yet another.
        rt::Work w2 = comm.recv(t[1], 0, 2);
        rt::Work w3a = comm.recv(t[2], 0, 3);
        rt::Work w3b = comm.recv(t[3], 0, 3);
        rt::Work w1 = comm.recv(t[0], 0, 1);
        w3b.wait();
        w1.wait();
        w2.wait();
        w3a.wait();
        w3a.wait();  // idempotent
        pending_after_wait[static_cast<std::size_t>(r)] = w3a.pending() || w1.pending() ? 1 : 0;
        for (const auto& x : t) got[static_cast<std::size_t>(r)].push_back(values_of<float>(x));
      });
      CHECK(std::count(pending_after_wait.begin(), pending_after_wait.end(), 1) == 0);
      for (int k = 0; k < 4; ++k) {
        CAPTURE(k);
        const int base = 10 * k;  // received tensors in the order tag 1, tag 2, tag 3 first, tag 3 second
        std::vector<std::vector<double>> kth;
        for (int q = 1; q < p; ++q)
          kth.push_back(got[static_cast<std::size_t>(q)][static_cast<std::size_t>(k)]);
        CHECK(mismatch(kth, n, [&](int idx, std::int64_t i) { return value(idx + 1 + base, i); }) == "");
      }
    }
  }

  TEST_CASE("receives posted before the matching send do not deadlock") {
    for (int p = 2; p <= max_world; p += 2) {
      CAPTURE(p);
      // Partners r and r^1 both post recv, then send, then wait.
      auto got = on_ranks<double>(p, [&](rt::Comm& comm) {
        const int partner = comm.rank() ^ 1;
        rt::Tensor in = rt::make_host_tensor({3}, rt::DType::f64);
        rt::Work w = comm.recv(in, partner);
        (void)comm.send(make_tensor<double>({3}, [&](std::int64_t i) { return value(comm.rank(), i); }),
                        partner);
        w.wait();
        return in;
      });
      CHECK(mismatch(got, 3, [&](int r, std::int64_t i) { return value(r ^ 1, i); }) == "");
    }
  }

  TEST_CASE("send/recv reject bad peers and mismatched messages") {
    auto peer = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) { (void)comm.send(rt::make_host_tensor({1}, rt::DType::f32), 2); });
    });
    CHECK(peer.type == "RuntimeError");
    CHECK(peer.says("outside the group of 2"));
    // 3 floats sent, 4 floats expected.
    auto size = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        if (comm.rank() == 0) {
          (void)comm.send(rt::make_host_tensor({3}, rt::DType::f32), 1);
        } else {
          rt::Tensor t = rt::make_host_tensor({4}, rt::DType::f32);
          comm.recv(t, 0).wait();
        }
      });
    });
    CHECK(size.type == "RuntimeError");
    CHECK(size.says("12 bytes"));
    // Same byte count, different dtype: 2 doubles sent, 4 floats expected.
    auto dtype = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        rt::Tensor t = rt::make_host_tensor({4}, rt::DType::f32);
        if (comm.rank() == 0) {
          (void)comm.send(rt::make_host_tensor({2}, rt::DType::f64), 1);
        } else {
          comm.recv(t, 0).wait();
        }
      });
    });
    CHECK(dtype.type == "RuntimeError");
    CHECK(dtype.says("float64 message"));
  }

  TEST_CASE("barrier orders plain writes before reads on every rank") {
    for (int p = 1; p <= max_world; ++p) {
      CAPTURE(p);
      // Unsynchronised ints: without the barrier's happens-before this is a data race (TSan) and a
      // rank could read a stale slot.
      std::vector<int> slots(static_cast<std::size_t>(p), 0);
      std::vector<std::vector<int>> sums(static_cast<std::size_t>(p));
      rt::run_ranks(p, [&](rt::Comm& comm) {
        const int r = comm.rank();
        for (int round = 0; round < 3; ++round) {
          slots[static_cast<std::size_t>(r)] = round * p + r + 1;
          comm.barrier();
          int sum = 0;
          for (const int s : slots) sum += s;
          sums[static_cast<std::size_t>(r)].push_back(sum);
          comm.barrier();  // nobody writes the next round before everyone has read
        }
      });
      for (int round = 0; round < 3; ++round) {
        // sum over r of (round*P + r + 1) = round*P^2 + P(P+1)/2
        const int want = round * p * p + p * (p + 1) / 2;
        for (int r = 0; r < p; ++r)
          CHECK(sums[static_cast<std::size_t>(r)][static_cast<std::size_t>(round)] == want);
      }
    }
  }
}

}  // namespace spsim::test
