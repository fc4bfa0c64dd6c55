// Gradient checks of Ulysses, Ring Attention (three layouts) and all-gather-KV against the float64
// reference: world sizes 1, 2, 3, 4, 8, causal and not, MHA and GQA, batch 2, attention and layer scope.
#include <doctest/doctest.h>

#include "analysis/check/check.hpp"
#include "analysis/config/document.hpp"
#include "analysis/config/sweep.hpp"
#include "runtime/core/error.hpp"
#include "sim/cluster/config.hpp"
#include "tests/strategies/check_config.hpp"

using namespace spsim;
using spsim::strategies_test::config;
using spsim::strategies_test::expect_exact;

namespace {

// Runs `fn(degree, causal, gqa, scope)` over the whole grid with the cases captured.
template <class Fn>
void grid(Fn&& fn) {
  for (int degree : {1, 2, 3, 4, 8})
    for (bool causal : {false, true})
      for (bool gqa : {false, true})
        for (auto scope : {models::Scope::attention, models::Scope::layer}) {
          CAPTURE(degree);
          CAPTURE(causal);
          CAPTURE(gqa);
          CAPTURE(static_cast<int>(scope));
          fn(degree, causal, gqa, scope);
        }
}

}  // namespace

TEST_CASE("ring attention matches the reference to 1e-12 in every layout, both backward send orders") {
  for (const char* layout : {"contiguous", "zigzag", "striped"}) {
    CAPTURE(layout);
    grid([&](int degree, bool causal, bool gqa, models::Scope scope) {
      expect_exact(config("ring", {{"layout", layout}}, degree, causal, gqa, scope));
    });
  }
  grid([&](int degree, bool causal, bool gqa, models::Scope scope) {
    expect_exact(config("ring", {{"layout", "zigzag"}, {"backward_sends", "packed"}}, degree, causal, gqa, scope));
  });
}

// GQA with 2 kv heads at P = 4, 8 needs the kv heads replicated; elsewhere kv_heads % P == 0.
TEST_CASE("ulysses matches the reference to 1e-12, separate and fused, with kv replication") {
  for (const char* fusion : {"separate", "fused"}) {
    CAPTURE(fusion);
    grid([&](int degree, bool causal, bool gqa, models::Scope scope) {
      const bool replicate = gqa && degree > 3;
      expect_exact(config("ulysses",
                          {{"qkv_fusion", fusion}, {"kv_replication", replicate ? "replicate" : "none"}},
                          degree, causal, gqa, scope));
    });
  }
}

TEST_CASE("allgather_kv matches the reference to 1e-12") {
  grid([&](int degree, bool causal, bool gqa, models::Scope scope) {
    expect_exact(config("allgather_kv", {}, degree, causal, gqa, scope));
    expect_exact(config("allgather_kv", {{"kv_exchange", "needed"}}, degree, causal, gqa, scope));
  });
}

TEST_CASE("float32 checks pass within the float32 tolerance") {
  for (const char* name : {"ring", "ulysses", "allgather_kv"}) {
    CAPTURE(name);
    auto cfg = config(name, {}, 4, true, false, models::Scope::layer);
    cfg.check.dtype = rt::DType::f32;
    const auto res = analysis::run_check(cfg);
    CHECK(res.tolerance == doctest::Approx(1e-4));
    for (const auto& t : res.tensors) {
      CAPTURE(t.name);
      CHECK(t.cmp.pass);
    }
  }
}

// The shipped check configs parse and pass (they are what `spsim check` users start from).
TEST_CASE("configs/checks for ulysses, ring, allgather_kv (with documents) and usp parse and pass") {
  for (const char* name : {"ulysses", "ulysses-fused", "ulysses-kv-replicate", "ring-contiguous",
                           "ring-zigzag", "ring-striped", "allgather-kv", "usp",
                           "allgather-kv-needed-documents"}) {
    CAPTURE(name);
    const auto cfg =
        analysis::load_config(std::string(SPSIM_SOURCE_DIR) + "/configs/checks/" + name + ".json");
    const auto res = analysis::run_check(cfg);
    CHECK(res.pass());
    for (const auto& t : res.tensors) {
      CAPTURE(t.name);
      CHECK(t.cmp.rel_err <= 1e-12);
    }
  }
}

// The strategy comparisons expand into valid points only (every strategy's constraints hold for
// llama3-8b at 64K on 8 ranks: 32 heads and 8 kv heads divide by 8, 65536 by 16; on 32 ranks the
// Ulysses-based ones replicate kv heads or keep Ulysses inside a node).
TEST_CASE("configs/experiments strategy comparisons expand into valid points") {
  // 9 strategy objects (3 RSA variants, 2 Ulysses, 3 ring layouts, all-gather-KV); 3 ring layouts;
  // 2 ring layouts x 2 backward send orders; Ulysses, ring, all-gather-KV and USP at 3 Ulysses degrees; 4 oversubscriptions x 4 strategies;
  // 2 masks x 12 (11 without Ulysses at 64 ranks) strategy objects.
  for (const auto& [name, count] :
       std::vector<std::pair<std::string, std::size_t>>{{"strategies-llama3-8b-64k", 9},
                                                        {"ring-layouts-llama3-8b-64k", 3},
                                                        {"ring-backward-sends-llama3-8b-64k-4node", 4},
                                                        {"strategies-llama3-8b-64k-4node", 6},
                                                        {"fabric-llama3-8b-512k-16node", 16},
                                                        {"documents-llama3-8b-128k-1node", 24},
                                                        {"documents-llama3-8b-512k-8node", 22}}) {
    CAPTURE(name);
    const auto cfg =
        analysis::load_config(std::string(SPSIM_SOURCE_DIR) + "/configs/experiments/" + name + ".json");
    const auto points = analysis::expand_sweep(cfg);
    CHECK(points.size() == count);
    REQUIRE(cfg.cluster.has_value());  // as many GPUs as the degree
    CHECK(cfg.cluster->nodes * cfg.cluster->gpus_per_node == cfg.strategy.degree);
    for (const auto& p : points) {
      CAPTURE(p.error);
      CHECK(p.ok());
    }
  }
}

// A config that breaks a constraint is bad input (InputError: `spsim check` exits 2) naming the reason.
TEST_CASE("configs breaking a strategy constraint are InputErrors with the reason") {
  const auto doc = [](const std::string& strategy, int heads, int seq, int degree) {
    return nlohmann::json::parse(R"({"schema_version": 1, "name": "x",
      "model": {"hidden": 32, "heads": )" +
                                 std::to_string(heads) + R"(, "kv_heads": )" + std::to_string(heads) +
                                 R"(, "head_dim": 4, "ffn_hidden": 8},
      "workload": {"seq_len": )" +
                                 std::to_string(seq) + R"(},
      "strategy": )" + strategy + R"(, "degree": )" +
                                 std::to_string(degree) + "}}");
  };
  CHECK_THROWS_WITH_AS((void)analysis::parse_config(doc(R"({"name": "ulysses")", 6, 24, 4), "x.json"),
                       doctest::Contains("heads 6 is not divisible by the degree 4"), InputError);
  CHECK_THROWS_WITH_AS((void)analysis::parse_config(
                           doc(R"({"name": "ring", "options": {"layout": "zigzag"})", 8, 36, 4), "x.json"),
                       doctest::Contains("seq_len 36 is not divisible by 2 x degree = 8"), InputError);
  CHECK_THROWS_WITH_AS((void)analysis::parse_config(doc(R"({"name": "allgather_kv")", 8, 36, 4), "x.json"),
                       doctest::Contains("seq_len 36 is not divisible by 2 x degree = 8"), InputError);
}
