// Collective algorithms of the threads backend, written as message exchanges among the group's ranks.
//
// Ring reduce-scatter (P-1 steps): at step s rank r sends its partial sum of chunk (r-s-1) mod P to
// r+1 and adds the partial sum of chunk (r-s-2) mod P received from r-1. Chunk c's sum starts at rank
// c+1 and ends, complete, at rank c: a fixed order, so results are deterministic.
// Ring all-gather (P-1 steps): at step s rank r forwards chunk (r-s) mod P to r+1 and stores chunk
// (r-s-1) mod P from r-1; every rank ends with copies of the same bytes.
// Pairwise all-to-all (P-1 steps): step k sends to (r+k) mod P and receives from (r-k) mod P.
// Dissemination barrier (ceil(log2 P) rounds): round k signals (r+2^k) mod P, waits for (r-2^k) mod P.
// (Thakur, Rabenseifner, Gropp, "Optimization of collective communication operations in MPICH",
//  IJHPCA 19(1), 2005; Hensgen, Finkel, Manber, "Two algorithms for barrier synchronization", 1988.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/core/comm_kind.hpp"
#include "runtime/threads/group.hpp"

namespace spsim::rt::threads_detail {

// Calls are stamped with the runtime's communication kinds (runtime/core/comm_kind.hpp).
using rt::CommKind;

// One collective call in progress on one rank: messages on the group's collective channel, stamped
// with the call's sequence number and kind so that ranks calling different collectives (non-SPMD
// code) get a RuntimeError instead of silently mixing data.
class Exchange {
 public:
  Exchange(Group& group, int rank, std::uint64_t seq, CommKind kind, DType dtype);
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return group_.size(); }
  void send(int dst, std::span<const std::byte> bytes);
  // Blocks for the next message from src; throws RuntimeError unless it is `bytes` long.
  [[nodiscard]] std::vector<std::byte> recv(int src, std::size_t bytes);
  // acc += the next message from src, elementwise in this exchange's dtype (f32 or f64).
  void recv_add(int src, std::span<std::byte> acc);

 private:
  [[nodiscard]] std::string describe(std::uint64_t stamp) const;

  Group& group_;
  int rank_;
  std::uint64_t stamp_;
  DType dtype_;
};

// chunks[j] is chunk j of this rank's buffer. Afterwards chunks[rank] holds the sum over the group.
void ring_reduce_scatter(Exchange& ex, const std::vector<std::span<std::byte>>& chunks);
// chunks[rank] holds this rank's piece. Afterwards every chunks[j] holds rank j's piece.
void ring_all_gather(Exchange& ex, const std::vector<std::span<std::byte>>& chunks);
// chunk_for(j): the bytes this rank sends to rank j (chunk_bytes long); store(j, bytes) keeps what
// rank j sent to this rank.
void pairwise_all_to_all(Exchange& ex, std::size_t chunk_bytes,
                         const std::function<std::vector<std::byte>(int)>& chunk_for,
                         const std::function<void(int, std::span<const std::byte>)>& store);
void dissemination_barrier(Exchange& ex);

}  // namespace spsim::rt::threads_detail
