// USP (Ulysses inside groups of u, Ring Attention across the P/u groups): gradient checks against the
// float64 reference for every u dividing P, the traffic of each level against closed forms, the mesh's
// groups, and the constraint messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "analysis/check/check.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "strategies/strategy.hpp"
#include "tests/strategies/check_config.hpp"

using namespace spsim;
using rt::trace::CommKind;
using rt::trace::CommOp;

namespace {

strategies::Options usp_options(int u, const std::string& layout, bool replicate,
                                const std::string& backward_sends = "separate") {
  const auto& info = *strategies::builtin().find("usp");
  return strategies::builtin().complete_options(info,
                                                {{"ulysses_degree", std::to_string(u)},
                                                 {"layout", layout},
                                                 {"kv_replication", replicate ? "replicate" : "none"},
                                                 {"backward_sends", backward_sends}},
                                                "strategy.options");
}

std::vector<int> divisors(int p) {
  std::vector<int> out;
  for (int u = 1; u <= p; ++u)
    if (p % u == 0) out.push_back(u);
  return out;
}

}  // namespace

TEST_CASE("usp matches the reference to 1e-12 for every Ulysses degree u dividing P") {
  // check_config.hpp: seq 48 = 2·3·8, so every ring level of r = P/u groups can zigzag (2r | 48) and
  // split its s/r tokens over u members; 8 query heads (6 for P = 3); GQA with 2 kv heads (3 for P = 3),
  // replicated when u > kv_heads.
  for (int degree : {1, 2, 3, 4, 8})
    for (int u : divisors(degree))
      for (bool causal : {false, true})
        for (bool gqa : {false, true})
          for (auto scope : {models::Scope::attention, models::Scope::layer}) {
            // Layouts rotate with u so every one is covered.
            const char* layout = u % 3 == 0 ? "striped" : (u % 2 == 0 ? "zigzag" : "contiguous");
            const std::int64_t kv_heads = gqa ? (degree == 3 ? 3 : 2) : (degree == 3 ? 6 : 8);
            // Both backward send orders of the ring level: packed at layer scope.
            const auto c = strategies_test::config(
                "usp",
                usp_options(u, layout, kv_heads % u != 0, scope == models::Scope::layer ? "packed" : "separate"),
                degree, causal, gqa, scope);
            CAPTURE(degree);
            CAPTURE(u);
            CAPTURE(causal);
            CAPTURE(gqa);
            CAPTURE(layout);
            const auto why = strategies::builtin().find("usp")->check(
                models::attention_problem(c.model, c.workload), degree, c.strategy.options);
            REQUIRE_MESSAGE(!why.has_value(), why.value_or(""));
            const auto res = analysis::run_check(c);
            for (const auto& t : res.tensors) {
              CAPTURE(t.name);
              CHECK(t.cmp.rel_err <= 1e-12);
            }
          }
}

TEST_CASE("usp traffic: all-to-all inside the Ulysses group, K/V ring across groups, in closed form") {
  // P = 8, s = 256, B = 2, H = 8, Hkv = 2, d = 16, bf16, zigzag. A rank's shard: |q| = B·H·(s/P)·d·2,
  // |k| = B·Hkv·(s/P)·d·2. With u ranks per group and ρ = u / Hkv kv replication when u > Hkv:
  //   all-to-all (group of u, own chunk stays): (u−1)/u · (|q| + ρ|k| + ρ|v| + |o|) forward and
  //     (u−1)/u · (|dO| + |dq| + ρ|dk| + ρ|dv|) backward;
  //   ring (group of r = P/u): K and V blocks of Hkv·ρ/u heads × s/r tokens = ρ|k| bytes each,
  //     r−1 passes forward; backward r−1 passes of K, V and, when r > 1, r passes of the dK, dV
  //     accumulators in fp32 (twice bf16's bytes; the ring's backward_sends = separate).
  const std::int64_t P = 8, s = 256, B = 2, H = 8, Hkv = 2, d = 16;
  const double q = B * H * (s / P) * d * 2.0, k = B * Hkv * (s / P) * d * 2.0;
  for (int u : {1, 2, 4, 8}) {
    CAPTURE(u);
    const int r = static_cast<int>(P) / u;
    const double rho = u > Hkv ? static_cast<double>(u) / Hkv : 1.0, f = (u - 1.0) / u;
    const auto opts = usp_options(u, "zigzag", u > Hkv);
    const auto& info = *strategies::builtin().find("usp");
    const models::AttnProblem pr{B, H, Hkv, d, s, true};
    REQUIRE_FALSE(info.check(pr, static_cast<int>(P), opts).has_value());
    const auto traces =
        rt::trace::trace_ranks(static_cast<int>(P), rt::DType::bf16, [&](rt::Device& dev, rt::Comm& comm) {
          auto pos = info.positions(comm.rank(), comm.size(), pr, opts);
          const std::int64_t n = pos.size();
          auto strategy = info.create({dev, comm, pr, opts, std::move(pos)});
          dev.begin_phase("forward");
          const rt::Tensor o = strategy->forward(dev.empty({B * H, n, d}), dev.empty({B * Hkv, n, d}),
                                                 dev.empty({B * Hkv, n, d}));
          dev.end_phase("forward");
          dev.begin_phase("backward");
          (void)strategy->backward(dev.empty(o.shape()));
          dev.end_phase("backward");
        });
    for (int rank = 0; rank < P; ++rank) {
      CAPTURE(rank);
      const auto& t = traces[static_cast<std::size_t>(rank)];
      double a2a[2] = {0, 0}, ring[2] = {0, 0};
      int phase = 0;
      for (const auto& rec : t.records) {
        if (const auto* b = std::get_if<rt::trace::PhaseBegin>(&rec)) phase = b->name == "backward" ? 1 : 0;
        const auto* op = std::get_if<CommOp>(&rec);
        if (!op) continue;
        const auto& members = std::find_if(t.groups.begin(), t.groups.end(), [&](const auto& g) {
                                return g.id == op->group;
                              })->members;
        if (op->kind == CommKind::all_to_all) {
          // The Ulysses group of rank i·u + j: ranks i·u .. i·u + u − 1.
          std::vector<int> want(static_cast<std::size_t>(u));
          for (int x = 0; x < u; ++x) want[static_cast<std::size_t>(x)] = rank / u * u + x;
          CHECK(members == want);
          a2a[phase] += f * static_cast<double>(op->bytes);
        } else if (op->kind == CommKind::sendrecv) {
          CHECK(op->dst == (rank + u) % P);  // the next member of the ring group j = rank mod u
          ring[phase] += static_cast<double>(op->bytes);
        }
      }
      CHECK(a2a[0] == doctest::Approx(f * (2 * q + 2 * rho * k)).epsilon(1e-12));
      CHECK(a2a[1] == doctest::Approx(f * (2 * q + 2 * rho * k)).epsilon(1e-12));
      CHECK(ring[0] == doctest::Approx((r - 1) * 2 * rho * k).epsilon(1e-12));
      CHECK(ring[1] == doctest::Approx((r - 1) * 2 * rho * k + (r > 1 ? r : 0) * 2 * 2 * rho * k).epsilon(1e-12));
    }
  }
}

TEST_CASE("usp constraints say which level fails; ulysses_degree 0 is gcd(P, 8)") {
  const auto& info = *strategies::builtin().find("usp");
  auto why = [&](int degree, strategies::Options o, models::AttnProblem pr) {
    const auto r =
        info.check(pr, degree, strategies::builtin().complete_options(info, o, "strategy.options"));
    return r.value_or("(ok)");
  };
  const models::AttnProblem pr{1, 8, 8, 16, 1024, true};
  CHECK(why(8, {{"ulysses_degree", "3"}}, pr).find("ulysses_degree 3 does not divide the degree 8") !=
        std::string::npos);
  CHECK(why(32, {{"ulysses_degree", "16"}}, pr).find("the Ulysses level") != std::string::npos);  // 8 heads
  CHECK(why(8, {{"ulysses_degree", "16"}}, pr).find("ulysses_degree 16 is larger than the degree 8") !=
        std::string::npos);
  CHECK(why(8, {{"ulysses_degree", "99999999999999999999999"}}, pr).find("is larger than the degree 8") !=
        std::string::npos);
  CHECK(why(8, {{"ulysses_degree", "1"}}, models::AttnProblem{1, 8, 8, 16, 1000, true})
            .find("the ring level") != std::string::npos);  // zigzag over 8 groups needs 16 | 1000
  CHECK(why(16, {}, pr) == "(ok)");
  // Auto on 16 ranks: u = 8, r = 2; rank 9 is member 1 of Ulysses group 1 (= ring member 1).
  const auto pos =
      info.positions(9, 16, models::AttnProblem{1, 8, 8, 4, 1024, true},
                     strategies::builtin().complete_options(info, {}, "strategy.options"))
          .expand();
  // Ring member 1 of r = 2 holds zigzag chunks 1 and 2 (positions 256..767, 512 tokens); its 8 Ulysses
  // members get 64 each in that order: member 1 holds 320..383.
  REQUIRE(pos.size() == 64);
  CHECK(pos.front() == 320);
  CHECK(pos.back() == 383);
}
