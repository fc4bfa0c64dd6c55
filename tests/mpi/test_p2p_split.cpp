// MpiComm point-to-point messages and sub-groups, against closed forms for any number of ranks P.
#ifdef SPSIM_WITH_MPI
#include <doctest/doctest.h>

#include "runtime/mpi/mpi_comm.hpp"
#include "tests/mpi/closed_forms.hpp"

namespace {

using spsim::rt::MpiComm;
using spsim::rt::MpiError;
using spsim::rt::RuntimeError;
using spsim::rt::Shape;
using spsim::rt::Tensor;
using spsim::test::filled;
using spsim::test::mismatches;
using spsim::test::value;

TEST_CASE_TEMPLATE("mpi ring_exchange and sendrecv with distinct peers", T, float, double) {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const int rank = world->rank();
  for (int shift : {1, 2}) {  // shift 1 is the ring pass; with P = 1 every rank talks to itself
    CAPTURE(shift);
    Tensor out = filled<T>({5, 3}, rank);
    Tensor in = spsim::rt::make_host_tensor({5, 3}, spsim::rt::dtype_of<T>());
    const int src = ((rank - shift) % p + p) % p;
    if (shift == 1) {
      world->ring_exchange(out, in).wait();
    } else {
      world->sendrecv(out, (rank + shift) % p, in, src, /*tag=*/3).wait();
    }
    CHECK(mismatches<T>(in, [&](std::int64_t i) { return value(src, i); }) == 0);
  }
}

TEST_CASE("mpi send/recv match by tag, not by posting order") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const int rank = world->rank();
  const int next = (rank + 1) % p;
  const int prev = (rank + p - 1) % p;
  // Two messages to the next rank: tag 1 carries value(rank, i), tag 2 carries value(rank, i) + 500.
  Tensor one = filled<double>({4}, rank);
  Tensor two = filled<double>({4}, rank);
  for (int i = 0; i < 4; ++i) two.data<double>()[i] += 500;
  auto send1 = world->send(one, next, 1);
  auto send2 = world->send(two, next, 2);
  Tensor got2 = spsim::rt::make_host_tensor({4}, spsim::rt::DType::f64);
  Tensor got1 = spsim::rt::make_host_tensor({4}, spsim::rt::DType::f64);
  auto recv2 = world->recv(got2, prev, 2);  // posted first, but must get the tag-2 message
  auto recv1 = world->recv(got1, prev, 1);
  recv2.wait();
  recv1.wait();
  send1.wait();
  send2.wait();
  CHECK(mismatches<double>(got1, [&](std::int64_t i) { return value(prev, i); }) == 0);
  CHECK(mismatches<double>(got2, [&](std::int64_t i) { return value(prev, i) + 500; }) == 0);
}

TEST_CASE("mpi recv reports a message of the wrong length as MpiError") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const int next = (world->rank() + 1) % p;
  const int prev = (world->rank() + p - 1) % p;
  Tensor buffer = spsim::rt::make_host_tensor({4}, spsim::rt::DType::f32);
  SUBCASE("longer than the buffer: MPI's own truncation error comes back instead of aborting") {
    auto sent = world->send(filled<float>({5}, 0), next, 7);
    auto received = world->recv(buffer, prev, 7);
    CHECK_THROWS_WITH_AS(received.wait(), doctest::Contains("MPI_ERR_TRUNCATE"), MpiError);
    sent.wait();
  }
  SUBCASE("shorter than the buffer") {
    auto sent = world->send(filled<float>({3}, 0), next, 8);
    auto received = world->recv(buffer, prev, 8);
    CHECK_THROWS_WITH_AS(received.wait(), doctest::Contains("received 3 elements, expected 4"), MpiError);
    sent.wait();
  }
  world->barrier();
}

TEST_CASE("mpi p2p rejects bad peers and tags") {
  auto world = MpiComm::duplicate_world();
  Tensor t = filled<float>({2}, 0);
  CHECK_THROWS_AS(static_cast<void>(world->send(t, world->size(), 0)), RuntimeError);
  CHECK_THROWS_AS(static_cast<void>(world->recv(t, -1, 0)), RuntimeError);
  CHECK_THROWS_AS(static_cast<void>(world->send(t, 0, -4)), RuntimeError);
}

// Sum over the members m of a group of value(m, i), the members given by their ranks in the world.
double group_sum(const std::vector<int>& members, std::int64_t i) {
  double sum = 0;
  for (int m : members) sum += value(m, i);
  return sum;
}

TEST_CASE("mpi split forms the groups of the color vector, ordered by rank") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const int rank = world->rank();
  struct Case {
    const char* name;
    int (*color)(int rank);
  };
  const Case cases[] = {{"parity", [](int r) { return r % 2; }},
                        {"pairs", [](int r) { return r / 2; }},
                        {"one group", [](int) { return 0; }},
                        {"singletons", [](int r) { return r; }}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    std::vector<int> colors(static_cast<std::size_t>(p));
    std::vector<int> members;  // world ranks of my group, ascending
    for (int r = 0; r < p; ++r) {
      colors[static_cast<std::size_t>(r)] = c.color(r);
      if (c.color(r) == c.color(rank)) members.push_back(r);
    }
    auto group = world->split(colors);
    REQUIRE(group != nullptr);
    CHECK(group->size() == static_cast<int>(members.size()));
    CHECK(members[static_cast<std::size_t>(group->rank())] == rank);
    CHECK(group->backend() == "mpi");
    // A collective on the subgroup sums over its members only.
    Tensor t = filled<float>({6}, rank);
    group->all_reduce(t).wait();
    CHECK(mismatches<float>(t, [&](std::int64_t i) { return group_sum(members, i); }) == 0);
    // A ring pass inside the group: from the previous member.
    const int g = group->size();
    const int prev = members[static_cast<std::size_t>((group->rank() + g - 1) % g)];
    Tensor in = spsim::rt::make_host_tensor({6}, spsim::rt::DType::f32);
    group->ring_exchange(filled<float>({6}, rank), in).wait();
    CHECK(mismatches<float>(in, [&](std::int64_t i) { return value(prev, i); }) == 0);
  }
}

TEST_CASE("mpi split of a split (2-D grid: pairs, then parity within a pair)") {
  auto world = MpiComm::duplicate_world();
  const int p = world->size();
  const int rank = world->rank();
  std::vector<int> pair_of(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) pair_of[static_cast<std::size_t>(r)] = r / 2;
  auto pair = world->split(pair_of);
  // Within a pair, ranks 2k and 2k+1 are pair ranks 0 and 1; color by pair rank: each alone.
  std::vector<int> own(static_cast<std::size_t>(pair->size()));
  for (int r = 0; r < pair->size(); ++r) own[static_cast<std::size_t>(r)] = r;
  auto alone = pair->split(own);
  CHECK(alone->size() == 1);
  CHECK(alone->rank() == 0);
  Tensor t = filled<double>({3}, rank);
  alone->all_reduce(t).wait();  // a group of one: the sum is the tensor itself
  CHECK(mismatches<double>(t, [&](std::int64_t i) { return value(rank, i); }) == 0);
}

TEST_CASE("mpi split rejects a bad color vector") {
  auto world = MpiComm::duplicate_world();
  const auto p = static_cast<std::size_t>(world->size());
  CHECK_THROWS_WITH_AS(static_cast<void>(world->split(std::vector<int>(p + 1, 0))),
                       doctest::Contains("colors for a group"), RuntimeError);
  CHECK_THROWS_WITH_AS(static_cast<void>(world->split(std::vector<int>(p, -1))),
                       doctest::Contains("negative"), RuntimeError);
}

}  // namespace
#endif  // SPSIM_WITH_MPI
