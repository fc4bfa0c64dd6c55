// The gradient check's data, shared by `spsim check` (threads ranks) and `spsim run --verify` (MPI or
// NCCL ranks): inputs generated from the seed, the float64 reference, row sharding by token position,
// and the tensor-by-tensor comparison. The same config and seed give the same tensors in both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/check/check.hpp"
#include "models/layer_params.hpp"
#include "models/spec.hpp"

namespace spsim::analysis {

using HostVec = std::vector<double>;

// A named global array (row-major doubles) with its shape.
struct Array {
  std::string name;
  rt::Shape shape;
  HostVec data;
};

// Rows of an [a, seq, c] array at `positions` (along dim 1) -> [a, positions.size(), c], or with
// `sequence_first` -> [positions.size(), a, c] (the token-major layout of strategies::step_sequence_first).
[[nodiscard]] HostVec gather_rows(const HostVec& global, std::int64_t a, std::int64_t seq, std::int64_t c,
                                  const std::vector<std::int64_t>& positions, bool sequence_first = false);
// Inverse of gather_rows: writes local rows into their global places.
void scatter_rows(const HostVec& local, HostVec& global, std::int64_t a, std::int64_t seq, std::int64_t c,
                  const std::vector<std::int64_t>& positions, bool sequence_first = false);

// Attention scope: q, dO (= r, the upstream gradient) [B·H, S, d]; k, v [B·Hkv, S, d]; N(0, 1) values
// from derive_seed(seed, 100..103).
struct AttentionInputs {
  HostVec q, k, v, r;
};
[[nodiscard]] AttentionInputs attention_inputs(const models::AttnProblem& p, std::uint64_t seed);

struct AttentionReference {
  HostVec o, dq, dk, dv;
};
// The float64 reference, split into independent (sample, kv head) groups computed on all cores.
[[nodiscard]] AttentionReference reference_attention(const models::AttnProblem& p, const AttentionInputs& in);

// Layer scope: parameters randomised from `seed`, x and dY (= r) [B, S, hidden] from
// derive_seed(seed, 101..102).
struct LayerInputs {
  models::LayerParams params;
  HostVec x, r;
};
[[nodiscard]] LayerInputs layer_inputs(const models::ModelSpec& m, std::int64_t batch, std::int64_t seq,
                                       std::uint64_t seed);

// The reference arrays a strategy's results are compared against, in check order:
// attention O, dQ, dK, dV; layer Y, dX, then every weight gradient (gradient_name order of the params).
[[nodiscard]] std::vector<Array> attention_reference_arrays(const models::AttnProblem& p,
                                                            const AttentionInputs& in);
[[nodiscard]] std::vector<Array> layer_reference_arrays(const models::ModelSpec& m,
                                                        const models::AttnProblem& p, const LayerInputs& in);

// Compares got[i] with reference[i] (same names and shapes) under `tolerance`, with the norm floor of
// compare.hpp set to 1e-3 × the largest reference norm.
[[nodiscard]] std::vector<TensorCheck> compare_arrays(const std::vector<Array>& reference,
                                                      const std::vector<Array>& got, double tolerance,
                                                      GroupSizes sizes);

}  // namespace spsim::analysis
