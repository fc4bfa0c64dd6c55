// What a backend's kernel launch looks like, beyond its FLOPs and bytes: the shapes the simulator's
// kernel models (sim/compute/) price. runtime/cost.cpp derives them from an op's operands and mask.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>

namespace spsim::rt {

// One GEMM kernel: batch independent problems of op(a) [m, k] × op(b) [k, n] → c [m, n]. c_bytes: the
// bytes per element of c its epilogue moves, when not a store in the op's dtype (0): 8 for an fp32
// accumulator read and written back (Megatron-LM's weight-gradient GEMM into fp32 main_grad).
struct GemmShape {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  std::int64_t c_bytes = 0;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

// The fused-attention kernel an implementation launches for one attention block, after it drops the
// rows and columns that see nothing (a zigzag half block) and slices (views: flash-attention takes
// operands strided in all but the last dimension) to what its kernel's mask can express.
//
// The kernel runs `bq` (batch·query heads) problems of `sq` query rows × `sk` keys with head dims d
// (q, k) and dv (v). Mask, in the kernel's local indices i (query) and j (key):
//   none      every pair is computed;
//   causal    key j is visible to query i iff j <= i + offset (offset = sk − sq is flash-attention's
//             bottom-right aligned causal mask; offset 0 with sq = sk the ordinary one);
//   fraction  another pattern: `fraction` of the pairs are visible, spread evenly.
struct AttentionLaunch {
  enum class Mask : std::uint8_t { none, causal, fraction };
  std::int64_t bq = 0, bk = 0, sq = 0, sk = 0, d = 0, dv = 0;
  Mask mask = Mask::none;
  std::int64_t offset = 0;  // causal only
  double fraction = 1;      // fraction only: visible pairs / (sq·sk)
  // HBM bytes (read + written) of the memory-bound kernels the op runs around the fused one: the
  // backward's D = rowsum(dO∘O) with the clear of its fp32 dQ accumulator, the dQ conversion, the
  // reduction of per-query-head dK/dV under GQA (runtime/cost.cpp); priced at the copy rate.
  std::uint64_t aux_bytes = 0;
  double active_rows = 1;  // fraction of the block's query rows that see at least one key
  friend bool operator==(const AttentionLaunch&, const AttentionLaunch&) = default;
};

// The GEMM kernels of one op, stored inline (no allocation per recorded op): at most two, a linear
// layer's backward (dW and dX).
class GemmList {
 public:
  GemmList() = default;
  GemmList(std::initializer_list<GemmShape> gemms) {
    for (const GemmShape& g : gemms) push_back(g);
  }
  void push_back(const GemmShape& g) {
    if (count_ == items_.size()) throw std::length_error("GemmList holds at most two GEMMs");
    items_[count_++] = g;
  }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] const GemmShape* begin() const { return items_.data(); }
  [[nodiscard]] const GemmShape* end() const { return items_.data() + count_; }
  friend bool operator==(const GemmList&, const GemmList&) = default;

 private:
  std::array<GemmShape, 2> items_{};
  std::size_t count_ = 0;
};

// The kernels one op launches (empty lists: priced by the op class roofline alone).
struct KernelShapes {
  std::optional<AttentionLaunch> attention;
  GemmList gemms;
  // Kernels the op launches, each paying the launch overhead (a backward counts its auxiliary
  // kernels); 0 = none (a skipped block).
  int launches = 1;
  // Bytes moved by the memory-bound kernels a GEMM op launches beside its GEMMs (a bias gradient's
  // reduction of dy over its rows: PyTorch's and Megatron-LM's grad_output.sum(0)), at the copy rate.
  std::uint64_t aux_bytes = 0;
  friend bool operator==(const KernelShapes&, const KernelShapes&) = default;
};

}  // namespace spsim::rt
