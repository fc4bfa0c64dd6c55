// Threads backend collectives against closed forms, over world sizes 1..9 and chunk sizes 0, 1, 7, 1000.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/runtime/threads_test_util.hpp"

namespace spsim::test {
namespace {

constexpr int max_world = 9;
constexpr std::int64_t chunk_sizes[] = {0, 1, 7, 1000};  // elements per chunk
// Strided 3-D cases cut [2, P*c, 3]-like tensors: a chunk holds 6c = 0, 6, 42, 1020 elements.
constexpr std::int64_t strided_extents[] = {0, 1, 7, 170};

}  // namespace

TEST_SUITE("threads") {
  TEST_CASE_TEMPLATE("all_reduce sums every rank's values, any element count", T, float, double) {
    for (int p = 1; p <= max_world; ++p) {
      for (const std::int64_t c : chunk_sizes) {
        // c alone is mostly not divisible by p (and c < p for 0 and 1): exercises uneven ring chunks.
        for (const std::int64_t n : {c, c * p}) {
          CAPTURE(p);
          CAPTURE(n);
          const auto results = on_ranks<T>(p, [&](rt::Comm& comm) {
            rt::Tensor t = make_tensor<T>({n}, [&](std::int64_t i) { return value(comm.rank(), i); });
            comm.all_reduce(t).wait();
            return t;
          });
          // Closed form: sum over ranks r of (1000 r + i) = 1000 P(P-1)/2 + P i.
          CHECK(mismatch(results, n, [&](int, std::int64_t i) { return sum_of_values(p, i); }) == "");
        }
      }
    }
  }

  TEST_CASE_TEMPLATE("all_reduce_coalesced sums each tensor of the bucket", T, float, double) {
    // Three tensors of 7, 0 and 1000 elements, tensor j holding value(rank, i) + 10⁵·j: after the
    // coalesced all-reduce each one holds its own sum over ranks, sum_of_values(P, i) + P·10⁵·j.
    constexpr std::int64_t sizes[] = {7, 0, 1000};
    for (int p = 1; p <= max_world; ++p) {
      CAPTURE(p);
      const auto results = on_ranks<T>(p, [&](rt::Comm& comm) {
        std::vector<rt::Tensor> bucket;
        for (int j = 0; j < 3; ++j)
          bucket.push_back(make_tensor<T>({sizes[j]}, [&](std::int64_t i) { return value(comm.rank(), i) + 1e5 * j; }));
        comm.all_reduce_coalesced(bucket).wait();
        // Concatenated, so the harness compares one tensor per rank.
        rt::Tensor all = rt::make_host_tensor({sizes[0] + sizes[1] + sizes[2]}, rt::dtype_of<T>());
        T* out = all.data<T>();
        for (const auto& t : bucket) out = std::copy_n(t.template data<T>(), t.numel(), out);
        return all;
      });
      CHECK(mismatch(results, 1007, [&](int, std::int64_t k) {
              const int j = k < 7 ? 0 : 2;
              const std::int64_t i = k < 7 ? k : k - 7;
              return sum_of_values(p, i) + p * 1e5 * j;
            }) == "");
    }
  }

  TEST_CASE_TEMPLATE("all_reduce is bit-identical on every rank and across runs", T, float, double) {
    // Values that are not exactly representable, so the summation order shows in the last bits.
    auto f = [](int r, std::int64_t i) { return 1.0 / (1.0 + r + 0.37 * static_cast<double>(i)); };
    for (int p = 1; p <= max_world; ++p) {
      for (const std::int64_t n : {std::int64_t{7}, std::int64_t{1000}}) {
        CAPTURE(p);
        CAPTURE(n);
        auto run = [&] {
          return on_ranks<T>(p, [&](rt::Comm& comm) {
            rt::Tensor t = make_tensor<T>({n}, [&](std::int64_t i) { return f(comm.rank(), i); });
            comm.all_reduce(t).wait();
            return t;
          });
        };
        const auto first = run();
        const auto second = run();
        bool same = true;
        for (int r = 0; r < p; ++r) same = same && first[r] == first[0] && second[r] == first[0];
        CHECK(same);
        // Reference: the sum in long double, independent of the ring's order.
        const double tol = sizeof(T) == 4 ? 1e-6 : 1e-14;
        double worst = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          long double ref = 0;
          for (int r = 0; r < p; ++r) ref += static_cast<T>(f(r, i));
          worst =
              std::max(worst, std::abs(first[0][i] - static_cast<double>(ref)) / static_cast<double>(ref));
        }
        CHECK(worst < tol);
      }
    }
  }

  TEST_CASE_TEMPLATE("reduce_scatter gives each rank its chunk of the sum", T, float, double) {
    for (int p = 1; p <= max_world; ++p) {
      for (const std::int64_t c : chunk_sizes) {
        CAPTURE(p);
        CAPTURE(c);
        // dim 0 of [P*c, 2]: rank r's output element k is global element r*2c + k.
        auto rs0 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in =
              make_tensor<T>({p * c, 2}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({c, 2}, rt::dtype_of<T>());
          comm.reduce_scatter(in, out, 0).wait();
          return out;
        });
        CHECK(mismatch(rs0, 2 * c, [&](int r, std::int64_t k) { return sum_of_values(p, r * 2 * c + k); }) ==
              "");
      }
      for (const std::int64_t c : strided_extents) {
        CAPTURE(p);
        CAPTURE(c);
        // dim 1 of [2, P*c, 3] (strided chunks): out[a, b, d] is in[a, r*c + b, d].
        auto rs1 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in =
              make_tensor<T>({2, p * c, 3}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({2, c, 3}, rt::dtype_of<T>());
          comm.reduce_scatter(in, out, 1).wait();
          return out;
        });
        CHECK(mismatch(rs1, 6 * c, [&](int r, std::int64_t k) {
                const std::int64_t a = k / (3 * c), b = k / 3 % c, d = k % 3;
                return sum_of_values(p, (a * p * c + r * c + b) * 3 + d);
              }) == "");
        // dim -1 of [2, 3, P*c]: out[a, b, d] is in[a, b, r*c + d].
        auto rs2 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in =
              make_tensor<T>({2, 3, p * c}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({2, 3, c}, rt::dtype_of<T>());
          comm.reduce_scatter(in, out, -1).wait();
          return out;
        });
        CHECK(mismatch(rs2, 6 * c, [&](int r, std::int64_t k) {
                const std::int64_t ab = k / c, d = k % c;
                return sum_of_values(p, ab * p * c + r * c + d);
              }) == "");
      }
    }
  }

  TEST_CASE_TEMPLATE("all_gather concatenates in rank order", T, float, double) {
    for (int p = 1; p <= max_world; ++p) {
      for (const std::int64_t c : chunk_sizes) {
        CAPTURE(p);
        CAPTURE(c);
        // dim 0: out = [in_0; in_1; ...], element k comes from rank k / 2c, its element k mod 2c.
        auto ag0 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in = make_tensor<T>({c, 2}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({p * c, 2}, rt::dtype_of<T>());
          comm.all_gather(in, out, 0).wait();
          return out;
        });
        CHECK(mismatch(ag0, p * c * 2, [&](int, std::int64_t k) {
                return value(static_cast<int>(k / (2 * c)), k % (2 * c));
              }) == "");
      }
      for (const std::int64_t c : strided_extents) {
        CAPTURE(p);
        CAPTURE(c);
        // dim 1 of [2, c, 3] -> [2, P*c, 3]: out[a, b, d] = in_{b / c}[a, b mod c, d].
        auto ag1 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in =
              make_tensor<T>({2, c, 3}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({2, p * c, 3}, rt::dtype_of<T>());
          comm.all_gather(in, out, 1).wait();
          return out;
        });
        CHECK(mismatch(ag1, 6 * p * c, [&](int, std::int64_t k) {
                const std::int64_t a = k / (3 * p * c), b = k / 3 % (p * c), d = k % 3;
                return value(static_cast<int>(b / c), (a * c + b % c) * 3 + d);
              }) == "");
      }
    }
  }

  TEST_CASE_TEMPLATE("all_to_all transposes chunks", T, float, double) {
    for (int p = 1; p <= max_world; ++p) {
      for (const std::int64_t c : chunk_sizes) {
        CAPTURE(p);
        CAPTURE(c);
        // split 0, concat 0 on [P*c]: out chunk j = chunk r of rank j's input.
        auto expect0 = [&](int r, std::int64_t k) { return value(static_cast<int>(k / c), r * c + k % c); };
        auto a00 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in =
              make_tensor<T>({p * c}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({p * c}, rt::dtype_of<T>());
          comm.all_to_all(in, out, 0, 0).wait();
          return out;
        });
        CHECK(mismatch(a00, p * c, expect0) == "");
        // The same exchange in place (in and out are one tensor).
        auto inplace = on_ranks<T>(p, [&](rt::Comm& comm) {
          rt::Tensor t = make_tensor<T>({p * c}, [&](std::int64_t i) { return value(comm.rank(), i); });
          comm.all_to_all(t, t, 0, 0).wait();
          return t;
        });
        CHECK(mismatch(inplace, p * c, expect0) == "");
      }
      for (const std::int64_t c : strided_extents) {
        CAPTURE(p);
        CAPTURE(c);
        // split 1, concat 2: [2, P*c, 3] -> [2, c, 3P]; out[a, b, 3j + d] = in_j[a, r*c + b, d].
        auto a12 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in =
              make_tensor<T>({2, p * c, 3}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({2, c, 3 * p}, rt::dtype_of<T>());
          comm.all_to_all(in, out, 1, 2).wait();
          return out;
        });
        CHECK(mismatch(a12, 6 * p * c, [&](int r, std::int64_t k) {
                const std::int64_t a = k / (c * 3 * p), b = k / (3 * p) % c, e = k % (3 * p);
                return value(static_cast<int>(e / 3), (a * p * c + r * c + b) * 3 + e % 3);
              }) == "");
        // split 2, concat 0 (Ulysses' heads <-> sequence re-layout): [2, 3, P*c] -> [2P, 3, c];
        // out[2j + a, b, d] = in_j[a, b, r*c + d].
        auto a20 = on_ranks<T>(p, [&](rt::Comm& comm) {
          const rt::Tensor in =
              make_tensor<T>({2, 3, p * c}, [&](std::int64_t i) { return value(comm.rank(), i); });
          rt::Tensor out = rt::make_host_tensor({2 * p, 3, c}, rt::dtype_of<T>());
          comm.all_to_all(in, out, 2, 0).wait();
          return out;
        });
        CHECK(mismatch(a20, 6 * p * c, [&](int r, std::int64_t k) {
                const std::int64_t x = k / (3 * c), b = k / c % 3, d = k % c;
                return value(static_cast<int>(x / 2), ((x % 2) * 3 + b) * p * c + r * c + d);
              }) == "");
      }
    }
  }

  TEST_CASE("collectives reject bad shapes and dtypes with RuntimeError") {
    // 3 rows cannot be cut into 2 chunks.
    auto odd = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        const rt::Tensor in = rt::make_host_tensor({3}, rt::DType::f64);
        rt::Tensor out = rt::make_host_tensor({1}, rt::DType::f64);
        comm.reduce_scatter(in, out, 0).wait();
      });
    });
    CHECK(odd.type == "RuntimeError");
    CHECK(odd.says("not divisible"));
    // all_gather of [2] on 2 ranks must produce [4].
    auto shape = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        const rt::Tensor in = rt::make_host_tensor({2}, rt::DType::f32);
        rt::Tensor out = rt::make_host_tensor({3}, rt::DType::f32);
        comm.all_gather(in, out, 0).wait();
      });
    });
    CHECK(shape.type == "RuntimeError");
    CHECK(shape.says("expected [4]"));
    // bf16 has no host arithmetic here.
    auto bf16 = thrown_by([] {
      rt::run_ranks(1, [](rt::Comm& comm) {
        rt::Tensor t = rt::make_host_tensor({4}, rt::DType::bf16);
        comm.all_reduce(t).wait();
      });
    });
    CHECK(bf16.type == "RuntimeError");
    CHECK(bf16.says("bf16"));
    // dim out of range.
    auto dim = thrown_by([] {
      rt::run_ranks(1, [](rt::Comm& comm) {
        const rt::Tensor in = rt::make_host_tensor({4}, rt::DType::f32);
        rt::Tensor out = rt::make_host_tensor({4}, rt::DType::f32);
        comm.all_to_all(in, out, 1, 0).wait();
      });
    });
    CHECK(dim.type == "RuntimeError");
    CHECK(dim.says("out of range"));
  }

  TEST_CASE("non-SPMD collectives are reported, not mixed") {
    // Rank 0 all-reduces 5 elements, rank 1 only 4: the ring chunks differ in size.
    auto sizes = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        rt::Tensor t = make_tensor<double>({comm.rank() == 0 ? 5 : 4}, [](std::int64_t i) { return i; });
        comm.all_reduce(t).wait();
      });
    });
    CHECK(sizes.type == "RuntimeError");
    CHECK(sizes.says("differ between ranks"));
    // Rank 0 all-reduces while rank 1 enters a barrier.
    auto kinds = thrown_by([] {
      rt::run_ranks(2, [](rt::Comm& comm) {
        if (comm.rank() == 0) {
          rt::Tensor t = make_tensor<double>({2}, [](std::int64_t i) { return i; });
          comm.all_reduce(t).wait();
        } else {
          comm.barrier();
        }
      });
    });
    CHECK(kinds.type == "RuntimeError");
    CHECK(kinds.says("same collectives in the same order"));
  }
}

}  // namespace spsim::test
