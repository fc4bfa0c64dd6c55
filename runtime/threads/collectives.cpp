// Ring, pairwise and dissemination collectives over the threads backend's mailboxes.
#include "runtime/threads/collectives.hpp"

#include <algorithm>
#include <string>

namespace spsim::rt::threads_detail {

namespace {
constexpr int kind_bits = 8;

[[nodiscard]] int mod(int a, int p) {
  return ((a % p) + p) % p;
}

template <class T>
void add_into(std::span<std::byte> acc, const std::vector<std::byte>& in) {
  // Both buffers are aligned for T: host storage is 64-byte aligned, chunk offsets are multiples of
  // sizeof(T), and message buffers come from operator new.
  auto* a = reinterpret_cast<T*>(acc.data());
  const auto* b = reinterpret_cast<const T*>(in.data());
  const std::size_t n = acc.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
}
}  // namespace

Exchange::Exchange(Group& group, int rank, std::uint64_t seq, CommKind kind, DType dtype)
    : group_(group),
      rank_(rank),
      stamp_(seq << kind_bits | static_cast<std::uint64_t>(kind)),
      dtype_(dtype) {}

std::string Exchange::describe(std::uint64_t stamp) const {
  const auto kind = static_cast<CommKind>(stamp & ((1U << kind_bits) - 1));
  return std::string(comm_kind_name(kind)) + " #" + std::to_string(stamp >> kind_bits);
}

void Exchange::send(int dst, std::span<const std::byte> bytes) {
  Message message{stamp_, dtype_, std::vector<std::byte>(bytes.begin(), bytes.end())};
  group_.mailbox(rank_, dst, Channel::collective, 0).deliver(std::move(message));
}

std::vector<std::byte> Exchange::recv(int src, std::size_t bytes) {
  Message m = group_.mailbox(src, rank_, Channel::collective, 0).take(describe(stamp_));
  if (m.stamp != stamp_)
    throw RuntimeError("threads comm: rank " + std::to_string(rank_) + " is in " + describe(stamp_) +
                       " but rank " + std::to_string(src) + " sent data for " + describe(m.stamp) +
                       " (every rank must post the same collectives in the same order)");
  if (m.dtype != dtype_ || m.bytes.size() != bytes)
    throw RuntimeError("threads comm: " + describe(stamp_) + ": rank " + std::to_string(rank_) +
                       " expected " + std::to_string(bytes) + " bytes of " + std::string(dtype_name(dtype_)) +
                       " from rank " + std::to_string(src) + ", got " + std::to_string(m.bytes.size()) +
                       " bytes of " + std::string(dtype_name(m.dtype)) +
                       " (shapes or dtypes differ between ranks)");
  return std::move(m.bytes);
}

void Exchange::recv_add(int src, std::span<std::byte> acc) {
  const std::vector<std::byte> in = recv(src, acc.size());
  if (dtype_ == DType::f64) {
    add_into<double>(acc, in);
  } else {
    add_into<float>(acc, in);
  }
}

void ring_reduce_scatter(Exchange& ex, const std::vector<std::span<std::byte>>& chunks) {
  const int p = ex.size();
  const int r = ex.rank();
  for (int s = 0; s + 1 < p; ++s) {
    ex.send(mod(r + 1, p), chunks[static_cast<std::size_t>(mod(r - s - 1, p))]);
    ex.recv_add(mod(r - 1, p), chunks[static_cast<std::size_t>(mod(r - s - 2, p))]);
  }
}

void ring_all_gather(Exchange& ex, const std::vector<std::span<std::byte>>& chunks) {
  const int p = ex.size();
  const int r = ex.rank();
  for (int s = 0; s + 1 < p; ++s) {
    ex.send(mod(r + 1, p), chunks[static_cast<std::size_t>(mod(r - s, p))]);
    const auto into = chunks[static_cast<std::size_t>(mod(r - s - 1, p))];
    const std::vector<std::byte> in = ex.recv(mod(r - 1, p), into.size());
    std::copy(in.begin(), in.end(), into.begin());
  }
}

void pairwise_all_to_all(Exchange& ex, std::size_t chunk_bytes,
                         const std::function<std::vector<std::byte>(int)>& chunk_for,
                         const std::function<void(int, std::span<const std::byte>)>& store) {
  const int p = ex.size();
  const int r = ex.rank();
  store(r, chunk_for(r));
  for (int k = 1; k < p; ++k) {
    const int dst = mod(r + k, p);
    const int src = mod(r - k, p);
    ex.send(dst, chunk_for(dst));
    store(src, ex.recv(src, chunk_bytes));
  }
}

void dissemination_barrier(Exchange& ex) {
  const int p = ex.size();
  const int r = ex.rank();
  for (int k = 1; k < p; k *= 2) {
    ex.send(mod(r + k, p), {});
    (void)ex.recv(mod(r - k, p), 0);
  }
}

}  // namespace spsim::rt::threads_detail
