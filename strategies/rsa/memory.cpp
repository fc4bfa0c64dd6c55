// The memory moments of ColossalAI's Ring Self-Attention at every scope (derivation in
// strategies/model/memory.hpp).
#include <algorithm>
#include <cmath>

#include "runtime/comm.hpp"
#include "strategies/layer.hpp"
#include "strategies/rsa/rsa.hpp"

namespace spsim::strategies {

namespace {

// Element counts of RSA on one rank, already multiplied by the dtype's size.
struct RsaSizes {
  double q, k, s, blk, f, ring_bufs;
  double dropped;  // the probabilities after attention dropout, a tensor of their own (0 without)
  double mask;     // its keep mask, a byte per score in whole elements (Device::empty_mask; 0 without)
  bool ring_reduction;
  bool view_kept;  // all-reduce-then-slice: the chunk is a view, the full buffer stays
                   // (strategies/rsa/rsa.cpp)
  bool staged;     // reduce-scatter of [B·Hkv, s, d] along s with B·Hkv > 1: strided chunks, packed
  explicit RsaSizes(const StepConfig& c) {
    const double e = static_cast<double>(rt::dtype_bytes(c.workload.dtype));
    const double b = static_cast<double>(c.workload.batch), h = static_cast<double>(c.model.heads),
                 hkv = static_cast<double>(c.model.kv_heads), d = static_cast<double>(c.model.head_dim),
                 seq = static_cast<double>(c.workload.seq_len);
    const int p = c.degree;
    const double rows = seq / p;
    q = b * h * rows * d * e;
    k = b * hkv * rows * d * e;
    s = b * h * rows * seq * e;
    dropped = c.model.attention_dropout > 0 ? s : 0;
    mask = c.model.attention_dropout > 0 ? std::ceil(s / e / e) * e : 0;
    blk = p > 1 ? b * h * rows * rows * e : 0;  // P = 1: the block is the score rows themselves
    f = b * hkv * seq * d * e;
    ring_bufs = std::min(p - 1, 2) * k;
    ring_reduction = c.options.at("grad_reduction") == "ring";
    view_kept = c.options.at("grad_reduction").rfind("allreduce_slice", 0) == 0;
    staged =
        c.options.at("grad_reduction") == "reduce_scatter" &&
        rt::chunks_strided({c.workload.batch * c.model.kv_heads, c.workload.seq_len, c.model.head_dim}, 1, p);
  }
  // What a dK/dV reduction holds on top of its inputs.
  [[nodiscard]] std::vector<MemoryTerm> reduction(int p) const {
    if (ring_reduction)
      return p > 1 ? std::vector<MemoryTerm>{{"ring accumulator, incoming, partial", 3 * k},
                                             {"score block slice", blk}}
                   : std::vector<MemoryTerm>{{"partial", k}, {"score block slice", blk}};
    if (staged) return {{"full-length dK/dV buffer", f}, {"owned chunk", k}, {"reduce-scatter staging", f}};
    return {{"full-length dK/dV buffer", f}, {"owned chunk", k}};
  }
};

std::vector<Moment> rsa_moments(const StepConfig& c, bool backward) {
  const RsaSizes z(c);
  const int p = c.degree;
  const MemoryTerm in = backward ? MemoryTerm{"q, k, v, do inputs", 2 * z.q + 2 * z.k}
                                 : MemoryTerm{"q, k, v inputs", z.q + 2 * z.k};
  const MemoryTerm bufs{"ring buffers", z.ring_bufs}, blk{"score block", z.blk};
  auto with = [](std::vector<MemoryTerm> a, const std::vector<MemoryTerm>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // With attention dropout, the dropped-out probabilities and their mask, from the dropout to the dV
  // reduction; without it no term (the moments are the plain attention's).
  const std::vector<MemoryTerm> dropped =
      z.dropped > 0 ? std::vector<MemoryTerm>{{"dropped-out probs, mask", z.dropped + z.mask}}
                    : std::vector<MemoryTerm>{};
  std::vector<Moment> m = {
      {"forward K ring", {in, {"scores", z.s}, bufs, blk}},
      {"forward softmax", {in, {"scores, probs", 2 * z.s}}},
  };
  if (z.dropped > 0) m.push_back({"forward dropout", with({in, {"scores, probs", 2 * z.s}}, dropped)});
  m.push_back({"forward V ring", with({in, {"scores, probs", 2 * z.s}, {"o", z.q}, bufs, blk}, dropped)});
  if (!backward) return m;
  const MemoryTerm held{"o", z.q};
  m.push_back({"backward V ring", with({in, held, {"probs, dprobs", 2 * z.s}, bufs, blk}, dropped)});
  m.push_back(
      {"backward dV reduce", with(with({in, held, {"probs, dprobs", 2 * z.s}}, dropped), z.reduction(p))});
  // After the dV reduction, all-reduce-then-slice still holds the full dV buffer behind its chunk.
  const std::vector<MemoryTerm> dv_view =
      z.view_kept ? std::vector<MemoryTerm>{{"full-length dV behind the dV view", z.f}}
                  : std::vector<MemoryTerm>{};
  if (z.dropped > 0)
    m.push_back({"backward dropout",
                 with({in, held, {"probs, dprobs, kept dprobs", 3 * z.s}, {"mask", z.mask}, {"dV", z.k}}, dv_view)});
  m.push_back(
      {"backward softmax", with({in, held, {"probs, dprobs, dscores", 3 * z.s}, {"dV", z.k}}, dv_view)});
  m.push_back({"backward dq ring",
               with({in, held, {"dprobs, dscores", 2 * z.s}, {"dV", z.k}, {"dq", z.q}, bufs, blk}, dv_view)});
  m.push_back({"backward dK reduce",
               with(with({in, held, {"dprobs, dscores", 2 * z.s}, {"dV", z.k}, {"dq", z.q}}, z.reduction(p)),
                    dv_view)});
  return m;
}

// Tensors strategies/layer.cpp keeps from forward to backward for one layer (without the attention
// core's own): x, h1, o2, r1, h2 [rows, hidden]; mean/rstd of both LNs [rows]; f1, g [rows, ffn] (and
// SwiGLU's f3).
double layer_saved_bytes(const StepConfig& c) {
  const double e = static_cast<double>(rt::dtype_bytes(c.workload.dtype));
  const double rows = static_cast<double>(c.workload.batch * c.workload.seq_len / c.degree);
  const double hidden = static_cast<double>(c.model.hidden), ffn = static_cast<double>(c.model.ffn_hidden);
  const double mlp_tensors = c.model.mlp == models::Mlp::swiglu ? 3 : 2;
  return (5 * rows * hidden + 4 * rows + mlp_tensors * rows * ffn) * e;
}

// Hidden dropout's two masks, a byte per element of [rows, hidden] (Device::empty_mask): a layer holds
// them from its residual adds to its backward's MLP and Wo, so never while its own attention runs,
// only while other layers' do.
double hidden_dropout_masks(const StepConfig& c) {
  if (c.model.hidden_dropout == 0) return 0;
  const double e = static_cast<double>(rt::dtype_bytes(c.workload.dtype));
  const double rows = static_cast<double>(c.workload.batch * c.workload.seq_len / c.degree);
  return 2 * std::ceil(rows * static_cast<double>(c.model.hidden) / e) * e;
}

}  // namespace

Modelled<MemoryEstimate> rsa_memory(const StepConfig& c) {
  const bool backward = c.workload.passes == models::Passes::fwd_bwd;
  const RsaSizes z(c);
  MemoryEstimate e = from_moments(rsa_moments(c, backward));
  e.full_grad_buffer_bytes = z.ring_reduction ? 0 : z.f;
  e.score_rows_bytes = z.s;
  if (c.workload.scope == models::Scope::attention) return e;
  if (auto why = replicated_layer_scope(c)) return Modelled<MemoryEstimate>::none(*why);
  // Layer and model: the attention core's peak sits on top of what the layers keep. Its inputs
  // q, k, v are also what the attention keeps of a layer, and probs (and the dropped-out probs) the RSA
  // state carried to backward.
  const double attention_kept = z.q + 2 * z.k + (backward ? z.s + z.dropped + z.mask : 0);
  const double per_layer = layer_saved_bytes(c) + hidden_dropout_masks(c) + attention_kept;
  const double layers = c.workload.scope == models::Scope::model ? static_cast<double>(c.model.layers) : 1;
  double kept_other_layers = (layers - 1) * per_layer;
  if (c.workload.recompute) {
    const double e_bytes = static_cast<double>(rt::dtype_bytes(c.workload.dtype));
    const double x = static_cast<double>(c.workload.batch * c.workload.seq_len / c.degree) *
                     static_cast<double>(c.model.hidden) * e_bytes;
    kept_other_layers = (layers - 1) * x;  // checkpoints; the current layer is rebuilt in full
  }
  e.activations_bytes = kept_other_layers + per_layer;
  e.terms.push_back({"this layer's saved activations", layer_saved_bytes(c)});
  if (layers > 1) e.terms.push_back({"other layers' kept activations", kept_other_layers});
  if (c.workload.scope == models::Scope::model) {
    e.model_state_bytes = 16 * model_parameters(c.model);
    e.terms.push_back({"weights, gradients, Adam state (16 B/param)", e.model_state_bytes});
  } else {
    const double wbytes = 2 * layer_params(c.model) * static_cast<double>(rt::dtype_bytes(c.workload.dtype));
    e.terms.push_back({"weights and weight gradients", wbytes});
  }
  e.peak_bytes = 0;
  for (const auto& t : e.terms) e.peak_bytes += t.bytes;
  return e;
}

}  // namespace spsim::strategies
