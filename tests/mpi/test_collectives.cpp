// MpiComm collectives against closed forms. Every rank r fills value(r, i) = 1000 r + i; ctest runs this
// executable under mpirun -np 1, 2, 3 and 4, so every expectation is written for a general P.
#ifdef SPSIM_WITH_MPI
#include <doctest/doctest.h>

#include <numeric>

#include "runtime/mpi/mpi_comm.hpp"
#include "tests/mpi/closed_forms.hpp"

namespace {

using spsim::rt::MpiComm;
using spsim::rt::Shape;
using spsim::rt::Tensor;
using spsim::test::filled;
using spsim::test::mismatches;
using spsim::test::ravel;
using spsim::test::scaled;
using spsim::test::unravel;
using spsim::test::value;

// sum over r < P of value(r, i) = 1000 (0 + 1 + ... + P-1) + P i = 500 P (P-1) + P i.
double summed(int p, std::int64_t i) {
  return 500.0 * p * (p - 1) + static_cast<double>(p) * static_cast<double>(i);
}

const Shape base_shape = {2, 3, 2};  // small, with distinct extents so a wrong dim shows

TEST_CASE("mpi world communicator matches MPI_COMM_WORLD") {
  auto world = MpiComm::duplicate_world();
  int rank = -1;
  int size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(world->rank() == rank);
  CHECK(world->size() == size);
  CHECK(world->backend() == "mpi");
}

TEST_CASE_TEMPLATE("mpi all_reduce sums over ranks", T, float, double) {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  // Message sizes 0, 1, not divisible by P (7, 30), large (2^20, one MiB+ of floats).
  for (const Shape& shape : {Shape{0}, Shape{1}, Shape{7}, Shape{2, 3, 5}, Shape{1 << 20}}) {
    CAPTURE(spsim::rt::to_string(shape));
    Tensor t = filled<T>(shape, world->rank());
    world->all_reduce(t).wait();
    CHECK(mismatches<T>(t, [&](std::int64_t i) { return summed(p, i); }) == 0);
  }
}

TEST_CASE_TEMPLATE("mpi reduce_scatter: chunk rank of the sum along dim", T, float, double) {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  for (int dim = 0; dim < 3; ++dim) {
    CAPTURE(dim);
    const Shape in_shape = scaled(base_shape, dim, p);
    Tensor out = spsim::rt::make_host_tensor(base_shape, spsim::rt::dtype_of<T>());
    world->reduce_scatter(filled<T>(in_shape, world->rank()), out, dim).wait();
    // out[idx] = sum over ranks of in[idx with idx[dim] + rank * base[dim]].
    CHECK(mismatches<T>(out, [&](std::int64_t i) {
            auto idx = unravel(base_shape, i);
            idx[static_cast<std::size_t>(dim)] += world->rank() * base_shape[static_cast<std::size_t>(dim)];
            return summed(p, ravel(in_shape, idx));
          }) == 0);
  }
}

TEST_CASE_TEMPLATE("mpi all_gather: concatenation of every rank's tensor in rank order", T, float, double) {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  for (int dim = -1; dim < 3; ++dim) {  // -1 is the last dim, like 2
    CAPTURE(dim);
    const int d = dim < 0 ? dim + 3 : dim;
    const auto extent = base_shape[static_cast<std::size_t>(d)];
    const Shape out_shape = scaled(base_shape, d, p);
    Tensor out = spsim::rt::make_host_tensor(out_shape, spsim::rt::dtype_of<T>());
    world->all_gather(filled<T>(base_shape, world->rank()), out, dim).wait();
    // out[idx] comes from rank idx[d] / extent, at idx[d] % extent of its tensor.
    CHECK(mismatches<T>(out, [&](std::int64_t i) {
            auto idx = unravel(out_shape, i);
            const auto src = static_cast<int>(idx[static_cast<std::size_t>(d)] / extent);
            idx[static_cast<std::size_t>(d)] %= extent;
            return value(src, ravel(base_shape, idx));
          }) == 0);
  }
}

// all_to_all for every (split_dim, concat_dim): rank j receives chunk j (along split_dim) of every rank's
// input and concatenates them along concat_dim in source-rank order.
TEST_CASE_TEMPLATE("mpi all_to_all transposes chunks", T, float, double) {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const int rank = world->rank();
  for (int s = 0; s < 3; ++s) {
    for (int c = 0; c < 3; ++c) {
      CAPTURE(s);
      CAPTURE(c);
      const Shape in_shape = scaled(base_shape, s, p);  // each rank's input
      const Shape& chunk_shape = base_shape;            // one chunk along s
      const Shape out_shape = scaled(base_shape, c, p);
      Tensor out = spsim::rt::make_host_tensor(out_shape, spsim::rt::dtype_of<T>());
      world->all_to_all(filled<T>(in_shape, rank), out, s, c).wait();
      CHECK(mismatches<T>(out, [&](std::int64_t i) {
              auto idx = unravel(out_shape, i);
              // Along c, out is P chunks of chunk_shape; chunk j came from rank j ...
              const auto src = static_cast<int>(idx[static_cast<std::size_t>(c)] /
                                                chunk_shape[static_cast<std::size_t>(c)]);
              idx[static_cast<std::size_t>(c)] %= chunk_shape[static_cast<std::size_t>(c)];
              // ... and is chunk `rank` along s of rank j's input.
              idx[static_cast<std::size_t>(s)] += rank * chunk_shape[static_cast<std::size_t>(s)];
              return value(src, ravel(in_shape, idx));
            }) == 0);
    }
  }
}

TEST_CASE("mpi all_to_all in place (in and out the same tensor) exchanges chunks") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const int rank = world->rank();
  for (int dim = 0; dim < 2; ++dim) {  // contiguous chunks (dim 0) and strided ones (dim 1)
    CAPTURE(dim);
    const Shape shape = scaled(Shape{2, 3}, dim, p);
    Tensor t = filled<double>(shape, rank);
    world->all_to_all(t, t, dim, dim).wait();
    // Chunk j of the result is chunk `rank` of rank j's tensor.
    CHECK(mismatches<double>(t, [&](std::int64_t i) {
            auto idx = unravel(shape, i);
            const std::int64_t chunk = shape[static_cast<std::size_t>(dim)] / p;
            const auto src = static_cast<int>(idx[static_cast<std::size_t>(dim)] / chunk);
            idx[static_cast<std::size_t>(dim)] = rank * chunk + idx[static_cast<std::size_t>(dim)] % chunk;
            return value(src, ravel(shape, idx));
          }) == 0);
  }
}

TEST_CASE("mpi non-blocking collectives overlap local work and complete in any wait order") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  Tensor a = filled<float>({1 << 16}, world->rank());
  Tensor b = filled<double>({1 << 12}, world->rank());
  spsim::rt::Work first = world->all_reduce(a);
  spsim::rt::Work second = world->all_reduce(b);
  CHECK(first.pending());
  CHECK(second.pending());
  // Local work while the reductions are in flight: 0 + 1 + ... + 9999 = 9999 * 10000 / 2.
  std::vector<std::int64_t> local(10000);
  std::iota(local.begin(), local.end(), std::int64_t{0});
  CHECK(std::accumulate(local.begin(), local.end(), std::int64_t{0}) == std::int64_t{9999} * 10000 / 2);
  second.wait();
  first.wait();
  CHECK_FALSE(first.pending());
  first.wait();  // idempotent
  CHECK(mismatches<float>(a, [&](std::int64_t i) { return summed(p, i); }) == 0);
  CHECK(mismatches<double>(b, [&](std::int64_t i) { return summed(p, i); }) == 0);
}

TEST_CASE("mpi Work dropped without wait completes in its destructor") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  Tensor t = filled<float>({9}, world->rank());
  { const spsim::rt::Work dropped = world->all_reduce(t); }
  CHECK(mismatches<float>(t, [&](std::int64_t i) { return summed(p, i); }) == 0);
}

TEST_CASE("mpi Work keeps its tensors alive until wait") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const Shape out_shape = scaled(base_shape, 1, p);
  Tensor out = spsim::rt::make_host_tensor(out_shape, spsim::rt::DType::f64);
  spsim::rt::Work work;
  {
    Tensor in = filled<double>(base_shape, world->rank());  // the only handle dies before wait()
    work = world->all_gather(in, out, 1);
  }
  work.wait();
  CHECK(mismatches<double>(out, [&](std::int64_t i) {
          auto idx = unravel(out_shape, i);
          const auto src = static_cast<int>(idx[1] / base_shape[1]);
          idx[1] %= base_shape[1];
          return value(src, ravel(base_shape, idx));
        }) == 0);
}

TEST_CASE("mpi collectives reject misuse before posting anything") {
  using spsim::rt::RuntimeError;
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  Tensor half = spsim::rt::make_host_tensor({4}, spsim::rt::DType::f16);
  CHECK_THROWS_WITH_AS(static_cast<void>(world->all_reduce(half)), doctest::Contains("fp16"), RuntimeError);
  Tensor f = filled<float>({2 * p, 3}, 0);
  Tensor d = spsim::rt::make_host_tensor({2, 3}, spsim::rt::DType::f64);
  CHECK_THROWS_WITH_AS(static_cast<void>(world->reduce_scatter(f, d)), doctest::Contains("dtypes differ"),
                       RuntimeError);
  Tensor wrong = spsim::rt::make_host_tensor({3, 3}, spsim::rt::DType::f32);
  CHECK_THROWS_WITH_AS(static_cast<void>(world->reduce_scatter(f, wrong)),
                       doctest::Contains("expected [2, 3]"), RuntimeError);
  CHECK_THROWS_AS(static_cast<void>(world->all_gather(f, wrong, 2)), RuntimeError);  // dim out of range
  if (p > 1) {  // every extent is divisible by 1
    Tensor odd = filled<float>({p + 1}, 0);
    Tensor out = spsim::rt::make_host_tensor({p + 1}, spsim::rt::DType::f32);
    CHECK_THROWS_WITH_AS(static_cast<void>(world->all_to_all(odd, out, 0, 0)),
                         doctest::Contains("not divisible"), RuntimeError);
  }
  // The group still works afterwards: nothing was posted.
  Tensor t = filled<float>({3}, world->rank());
  world->all_reduce(t).wait();
  CHECK(mismatches<float>(t, [&](std::int64_t i) { return summed(p, i); }) == 0);
}

}  // namespace
#endif  // SPSIM_WITH_MPI
