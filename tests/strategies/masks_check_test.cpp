// Gradient checks under document and sliding-window masks: every strategy and layout against the
// float64 reference (which the models suite ties to per-document causal attention), P ∈ {2, 3, 4, 8},
// MHA and GQA, batch 2; and the megatron_sp layer with CP inside it.
#include <doctest/doctest.h>

#include "analysis/check/check.hpp"
#include "strategies/layer_strategy.hpp"
#include "tests/strategies/check_config.hpp"

using namespace spsim;
using spsim::strategies_test::config;

namespace {

// seq 48: documents of 20, 3, 17 and 8 tokens (the 3-token one is shorter than a rank's chunk at every P
// tested: 48 / 8 = 6; zigzag's half chunks at P = 4 are 6 too); a window of 5, shorter than a chunk.
struct MaskCase {
  const char* name;
  std::vector<std::int64_t> documents;
  std::int64_t window;
  bool causal;
};
const MaskCase kMasks[] = {
    {"document_causal", {20, 3, 17, 8}, 0, true},
    {"sliding_window", {}, 5, true},
    {"sliding_window, both directions", {}, 5, false},
    {"documents with a window", {20, 3, 17, 8}, 5, true},
};

void expect_exact(analysis::Config cfg, const MaskCase& m) {
  cfg.workload.causal = m.causal;
  cfg.workload.bounds = rt::MaskBounds(m.documents, m.window);
  strategies_test::expect_exact(cfg);
}

template <class Fn>
void grid(Fn&& fn) {
  for (const MaskCase& m : kMasks)
    for (int degree : {2, 3, 4, 8})
      for (bool gqa : {false, true}) {
        CAPTURE(m.name);
        CAPTURE(degree);
        CAPTURE(gqa);
        fn(m, degree, gqa);
      }
}

}  // namespace

TEST_CASE("masks: ring attention in every layout matches the reference to 1e-12") {
  for (const char* layout : {"contiguous", "zigzag", "striped", "balanced"}) {
    CAPTURE(layout);
    grid([&](const MaskCase& m, int degree, bool gqa) {
      expect_exact(config("ring", {{"layout", layout}}, degree, m.causal, gqa, models::Scope::attention), m);
    });
  }
}

TEST_CASE("masks: ulysses, allgather_kv (both exchanges), usp and rsa match the reference to 1e-12") {
  grid([&](const MaskCase& m, int degree, bool gqa) {
    const bool replicate = gqa && degree > 3;
    expect_exact(config("ulysses", {{"kv_replication", replicate ? "replicate" : "none"}}, degree, m.causal, gqa,
                        models::Scope::attention),
                 m);
    expect_exact(config("allgather_kv", {}, degree, m.causal, gqa, models::Scope::attention), m);
    for (const char* layout : {"contiguous", "zigzag", "balanced"})
      expect_exact(config("allgather_kv", {{"layout", layout}, {"kv_exchange", "needed"}}, degree, m.causal, gqa,
                          models::Scope::attention),
                   m);
    expect_exact(config("rsa", {{"grad_reduction", "reduce_scatter"}}, degree, m.causal, gqa,
                        models::Scope::attention),
                 m);
    // USP: Ulysses over 2 ranks (3 at P = 3: one ring group), the ring over the rest.
    for (const char* layout : {"zigzag", "balanced"})
      expect_exact(config("usp",
                          {{"ulysses_degree", degree == 3 ? "3" : "2"}, {"layout", layout},
                           {"kv_replication", gqa && degree == 8 ? "replicate" : "none"}},
                          degree, m.causal, gqa, models::Scope::attention),
                   m);
  });
}

// document_zigzag needs every document to divide by 2P: documents of 16, 8 and 24 at P = 2 and 4.
TEST_CASE("masks: document_zigzag (ring, all-gather-KV, USP) matches the reference to 1e-12") {
  const MaskCase docs{"document_causal, multiples of 2P", {16, 8, 24}, 0, true};
  const MaskCase windowed{"document_causal with a window", {16, 8, 24}, 5, true};
  for (const MaskCase* m : {&docs, &windowed})
    for (int degree : {2, 4})
      for (bool gqa : {false, true}) {
        CAPTURE(m->name);
        CAPTURE(degree);
        CAPTURE(gqa);
        expect_exact(config("ring", {{"layout", "document_zigzag"}}, degree, m->causal, gqa, models::Scope::attention),
                     *m);
        expect_exact(config("allgather_kv", {{"layout", "document_zigzag"}, {"kv_exchange", "needed"}}, degree,
                            m->causal, gqa, models::Scope::attention),
                     *m);
        if (degree == 4)  // ring level of 2 groups: documents divide by 4
          expect_exact(config("usp", {{"ulysses_degree", "2"}, {"layout", "document_zigzag"}}, degree, m->causal,
                              gqa, models::Scope::attention),
                       *m);
      }
}

// The layer scope: the mask reaches attention through the whole layer (one strategy per family, P = 4).
TEST_CASE("masks: layer scope, and megatron_sp with CP inside, match the reference to 1e-12") {
  for (const MaskCase& m : kMasks) {
    CAPTURE(m.name);
    expect_exact(config("ring", {{"layout", "zigzag"}}, 4, m.causal, true, models::Scope::layer), m);
    expect_exact(config("ulysses", {}, 4, m.causal, false, models::Scope::layer), m);
    for (const char* cp : {"ring", "allgather_kv"}) {
      CAPTURE(cp);
      analysis::Config c = config(cp, {}, 2, m.causal, true, models::Scope::layer);
      c.model.kv_heads = 4;
      c.parallel.tp = 2;
      c.layer.name = "megatron_sp";
      c.layer.entry = strategies::find_layer_strategy("megatron_sp");
      c.layer.options = strategies::complete_layer_options(*c.layer.entry, {{"sequence_parallel", "true"}},
                                                           "layer.options");
      expect_exact(c, m);
    }
  }
}
