// The memory model a strategy family registers (strategies/<family>/memory.cpp): the tensors alive at
// each moment of one step on one rank, summed; the peak is the largest moment. Each family's file
// derives its list. Element counts below are × dtype bytes.
//
// Attention scope, RSA (strategies/rsa/rsa.cpp), one rank, element counts (× dtype bytes):
//   Q = B·H·c·d (q, o, dq, do), K = B·Hkv·c·d (k, v, dk, dv, one ring buffer), c = s/P,
//   S = B·H·c·s (the s/P × s score rows: scores, probs, dprobs, dscores), Bk = B·H·c·c (one block),
//   F = B·Hkv·s·d (the full-length dK/dV partial sum of the all-reduce and reduce-scatter variants),
//   R = min(P−1, 2) ring buffers in flight (the chunk being used and the one arriving).
// The harness (strategies/step.hpp) creates q, k, v and do before the step and keeps them
// (In = 2Q + 2K; Q + 2K for passes "fwd"), and holds o from the forward on.
//   forward   K ring     In + S + R·K + Bk                          (scores, buffers, one block)
//             softmax    In + 2S                                    (scores, probs)
//             V ring     In + 2S + Q + R·K + Bk                     (+ o, a probs slice)
//   backward  V ring     In + Q + S  + S + R·K + Bk                 (o; probs kept; dprobs)
//             dV reduce  In + Q + 2S + red                           red: F + K (the full buffer, then the
//                                                                   owned slice) for allreduce_slice(_div)
//                                                                   and reduce_scatter (+ F, its staging
//                                                                   copy, when B·Hkv > 1); 3K + Bk for ring
//                                                                   (accumulator, incoming, partial, its
//                                                                   slice)
//             softmax'   In + Q + 3S + K                            (probs, dprobs, dscores; dV)
//             dq ring    In + Q + 2S + K + Q + R·K + Bk             (probs freed; dq)
//             dK reduce  In + Q + 2S + K + Q + red
//
// Ulysses (strategies/ulysses/ulysses.cpp; strategies/<family>/memory.cpp), T = Q + 2Kr the head-sharded q,
// k, v (Kr = rep·K, rep = P/Hkv copies of each kv head when Hkv < P, else 1), L = B·H·c lse:
//   forward   to heads    In + [2Kr replicated k, v] + T            (fused: + 2T packed send and receive
//                                                                   + max_i(prefix_i + 2·x_i) for the
//                                                                   slice and permute of x = q, k, v)
//             attention   In + T + Q + L + Q                        (head-sharded q, k, v, o, lse; o back)
//   backward  attention   In + Q + T + Q + L + Q + T                (+ dO heads, dq, dk, dv heads)
//             to sequence In + Q + Q + T + T                        (q, k, v, o, lse freed; fused: + 4T for
//                                                                   the permuted parts, send, receive,
//                                                                   slices)
//             replicas    In + Q + Q + T + T + 2K + rep             (replicated gradients summed into dk, dv)
// Ring Attention (strategies/ring/ring.cpp), L = B·H·c, o and lse kept from the forward, a = the
// accumulator's bytes over the dtype's (rt::accumulator_dtype: 2 for bf16 and fp16, 1 for fp32):
//   forward   In + Q + L + (4K for P ≥ 3, 2K for P = 2) + Q + L      (K/V in use and arriving, a block's
//                                                                   o, lse)
//   backward, backward_sends = packed:
//             In + Q + L + (Q + 2K) + X                              (dq, dk, dv; X = 10K for P ≥ 4: K/V in
//                                                                   use and arriving, accumulator in flight,
//                                                                   the one arriving, the fresh partial; 8K
//                                                                   at P = 3, 4K at P = 2)
//   backward, backward_sends = separate, P ≥ 2 (fp32 accumulators; the gradients are made at the end;
//   a ring of one takes the packed path):
//     step 0  In + Q + L + aQ + (Q + 2K) + 2aK + 2K                  (dq accumulator, the block's dq, dk,
//                                                                   dv, the dk/dv accumulator, the next
//                                                                   K/V block arriving)
//     summing In + Q + L + aQ + (6K for P ≥ 3, 4K at P = 2) + 6aK    (K/V in use and arriving, the block's
//                                                                   dk, dv; accumulators in flight,
//                                                                   arriving and their sum)
//     end     In + Q + L + aQ + 4aK + (Q + 2K)                       (the last accumulator sent, the one
//                                                                   home, the gradients)
//   The sum is made only at a step j ≥ 1 whose block has a visible pair: where no rank has one (every
//   document inside one rank's chunk), the summing moment is an upper bound on the traced peak.
// USP (strategies/usp/usp.cpp; u = ulysses_degree, r = P/u): the Ulysses list above with u for P
// (Kr = rep·K, rep = u/Hkv when Hkv < u), and Ring Attention on the head-sharded q, k, v inside it.
// The ring level's tensors have the sizes of Ring Attention's with K → Kr: its q, o are H/u heads ×
// s/r tokens = Q, its K/V blocks Kr, its lse L. Two moments change:
//   forward   ring        In + T + Q + L + (4Kr for r ≥ 3, 2Kr for r = 2, 0 for r = 1)
//                         + [r ≥ 2] (Q + L)                       (blocks in use and arriving, a block's o,
//                         lse)
//   backward  ring        In + Q + T + Q + L + Q + the ring backward's moments above with K → Kr
//                                                                 (Ulysses' held tensors and dO heads; the
//                                                                 ring's dq, dk, dv are Q + 2Kr = T)
// the other moments are Ulysses' (the ring frees its q, k, v, o, lse at the end of its backward, as the
// local attention does). u = P gives Ulysses' list (r = 1), u = 1 Ring Attention's plus the head-
// layout copies of a group of one (T forward and backward).
// all-gather-KV (strategies/allgather_kv/allgather_kv.cpp), F = B·Hkv·s·d the gathered K:
//   forward   In + 2F + Q + L;   backward attention In + 2F + Q + L + Q + 2F;
//   reduce-scatter In + Q + Q + 2F + 2K (gathered K, V and lse freed).
// Staging (rt::chunks_strided): a collective whose chunks are strided holds a copy of its tensor from
// post to wait (pack and/or unpack). Ulysses: + the q, k, v (or o, dO, or gradient) copies at each
// exchange, a tensor counting once on the sequence side when B > 1 and once on the head side when
// B·heads/u > 1 (the dO exchange is then a moment of its own); fused: + 2T at the exchange when B > 1.
// all-gather-KV: + 2F at the all-gathers and at the reduce-scatters when B·Hkv > 1. Groups of one
// stage nothing. NCCL's internal buffers are fixed-size (not proportional to n) and are not counted.
//
// The s/P × s rows dominate: S / F = (H/Hkv)·(c/d), so F matters only when s/P is near the head dim;
// the ring variant removes F (P× the buffer it keeps), which the table reports separately.
//
// Scope "model" adds, per rank (weights replicated across the SP group):
//   weights, gradients and Adam state: 2 + 2 + 12 bytes per parameter (bf16 weights and gradients,
//   fp32 master weights, momentum and variance: Rajbhandari et al., "ZeRO", SC'20, §3.1, K = 12);
//   activations kept for backward per layer (strategies/layer.cpp's saved tensors plus what the
//   attention core keeps): x, h1, o2, r1, h2 (5·rows·hidden), mean/rstd ×2 (4·rows), f1, g
//   (2·rows·ffn; SwiGLU's up projection f3 a third), q, k, v (Q + 2K) and for RSA the probs S;
//   rows = B·s/P.
//   With workload.recompute only each layer's input x is kept, and one layer's activations are rebuilt
//   during its backward (Chen et al. 2016), as the traced step does (strategies/step.hpp).
// The traced step (strategies/step.hpp) holds the same 16 bytes per parameter, except that each
// layer's gradients are allocated during its backward (as PyTorch does after zero_grad(set_to_none)),
// when later layers' activations are already freed: this model, which counts all gradients and all
// activations at once, is an upper bound on the traced peak for scope "model".
// Scope "layer" is one layer's kept activations plus the attention core's backward peak above them.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "strategies/model/estimate.hpp"

namespace spsim::strategies {

struct MemoryTerm {
  std::string name;
  double bytes = 0;
};

struct MemoryEstimate {
  double peak_bytes = 0;              // per rank
  std::string peak_at;                // the moment of the peak ("backward dK reduce", ...)
  std::vector<MemoryTerm> terms;      // what is alive at the peak, summing to peak_bytes
  double full_grad_buffer_bytes = 0;  // F·bytes: the full-length dK/dV buffer (0 for ring)
  double score_rows_bytes = 0;        // S·bytes: one s/P × s score matrix
  double model_state_bytes = 0;       // weights + gradients + Adam state (scope model)
  double activations_bytes = 0;       // kept for backward, all layers (scope layer/model)
};

// What is alive at one moment of the step; the peak is the largest moment.
struct Moment {
  std::string name;
  std::vector<MemoryTerm> terms;
  [[nodiscard]] double total() const {
    double t = 0;
    for (const auto& x : terms) t += x.bytes;
    return t;
  }
};

// The largest moment as an estimate (its name and terms).
[[nodiscard]] inline MemoryEstimate from_moments(const std::vector<Moment>& moments) {
  const auto worst = std::max_element(moments.begin(), moments.end(),
                                      [](const Moment& a, const Moment& b) { return a.total() < b.total(); });
  MemoryEstimate e;
  e.peak_bytes = worst->total();
  e.peak_at = worst->name;
  e.terms = worst->terms;
  return e;
}

// a followed by b.
[[nodiscard]] inline std::vector<MemoryTerm> with(std::vector<MemoryTerm> a,
                                                  const std::vector<MemoryTerm>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace spsim::strategies
