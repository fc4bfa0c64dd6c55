// Op cost formulas (runtime/cost.hpp) against closed forms written out here.
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "runtime/cost.hpp"

using namespace spsim::rt;

namespace {
Positions iota_positions(std::int64_t first, std::int64_t n) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), first);
  return Positions(p);
}
}  // namespace

TEST_CASE("gemm flops are 2 m n k per batch and bytes are the operands") {
  // a [3, 5, 7] @ b [3, 7, 11] -> c [3, 5, 11]: 3 batches of 5*11 dot products of length 7,
  // each 7 multiplies + 7 adds.
  const OpCost c = cost::gemm({3, 5, 7}, {3, 7, 11}, {3, 5, 11}, Trans::N, Trans::N, DType::f32, false);
  CHECK(c.op_class == OpClass::gemm);
  CHECK(c.flops == doctest::Approx(2.0 * 5 * 11 * 7 * 3));
  CHECK(c.bytes_read == (3 * 5 * 7 + 3 * 7 * 11) * 4);  // a and b in f32
  CHECK(c.bytes_written == 3 * 5 * 11 * 4);

  SUBCASE("beta != 0 also reads c") {
    const OpCost acc = cost::gemm({3, 5, 7}, {3, 7, 11}, {3, 5, 11}, Trans::N, Trans::N, DType::f32, true);
    CHECK(acc.bytes_read == (3 * 5 * 7 + 3 * 7 * 11 + 3 * 5 * 11) * 4);
  }
  SUBCASE("transposes: aᵀ [7, 5] and bᵀ [11, 7] give the same 5 x 11 x 7 problem") {
    const OpCost t = cost::gemm({7, 5}, {11, 7}, {5, 11}, Trans::T, Trans::T, DType::bf16, false);
    CHECK(t.flops == doctest::Approx(2.0 * 5 * 11 * 7));
    CHECK(t.bytes_written == 5 * 11 * 2);  // bf16 is 2 bytes
  }
  SUBCASE("batch broadcasting (GQA): batch = max of the operand batches") {
    const GemmDims g = gemm_dims({8, 4, 6}, {2, 6, 3}, {8, 4, 3}, Trans::N, Trans::N);
    CHECK(g.batch == 8);
    CHECK(cost::gemm({8, 4, 6}, {2, 6, 3}, {8, 4, 3}, Trans::N, Trans::N, DType::f32, false).flops ==
          doctest::Approx(2.0 * 4 * 3 * 6 * 8));
    // dK of GQA: the output has the smaller batch and receives the sum.
    CHECK(gemm_dims({8, 6, 4}, {8, 4, 3}, {2, 6, 3}, Trans::N, Trans::N).batch == 8);
  }
}

TEST_CASE("gemm shape errors throw RuntimeError") {
  CHECK_THROWS_AS((void)gemm_dims({5, 7}, {6, 11}, {5, 11}, Trans::N, Trans::N), RuntimeError);  // k 7 vs 6
  CHECK_THROWS_AS((void)gemm_dims({5, 7}, {7, 11}, {5, 12}, Trans::N, Trans::N), RuntimeError);  // c cols
  CHECK_THROWS_AS((void)gemm_dims({5, 7}, {7, 11}, {5, 11}, Trans::T, Trans::N), RuntimeError);  // aᵀ is 7x5
  CHECK_THROWS_AS((void)gemm_dims({3, 5, 7}, {2, 7, 11}, {3, 5, 11}, Trans::N, Trans::N),
                  RuntimeError);  // 3 vs 2
  CHECK_THROWS_AS((void)gemm_dims({1, 1, 5, 7}, {7, 11}, {5, 11}, Trans::N, Trans::N), RuntimeError);  // 4-D
}

TEST_CASE("attention forward is 4 sq sk d per query batch, backward 10 sq sk d") {
  // q [4, 16, 8], k = v [2, 32, 8] (GQA, 2 query heads per kv head), no mask: QKᵀ and PV are each
  // 2*16*32*8 flops per query batch.
  const Mask none;
  const OpCost f = cost::attention_forward({4, 16, 8}, {2, 32, 8}, {2, 32, 8}, DType::bf16, none);
  CHECK(f.op_class == OpClass::attention_forward);
  CHECK(f.flops == doctest::Approx(4.0 * 16 * 32 * 8 * 4));
  CHECK(f.bytes_read == (4 * 16 * 8 + 2 * 2 * 32 * 8) * 2);  // q, k, v in bf16
  CHECK(f.bytes_written == (4 * 16 * 8 + 4 * 16) * 2);       // o and lse
  const OpCost b = cost::attention_backward({4, 16, 8}, {2, 32, 8}, {2, 32, 8}, DType::bf16, none);
  CHECK(b.op_class == OpClass::attention_backward);
  CHECK(b.flops == doctest::Approx(10.0 * 16 * 32 * 8 * 4));
  CHECK(b.flops == doctest::Approx(2.5 * f.flops));
  CHECK(b.bytes_written == (4 * 16 * 8 + 2 * 2 * 32 * 8) * 2);  // dq, dk, dv
  // The kernels around the backward, in bytes: D = rowsum(dO∘O) reads dO and O (bf16) and writes D
  // (fp32) per row, clearing the fp32 dQ accumulator; the dQ conversion reads fp32, writes bf16; GQA:
  // the per-query-head dK and dV (4 heads × 32 keys × 8, bf16) are read and summed into 2 KV heads.
  const double rows = 4 * 16, dq = rows * 8, kv = 32 * (8 + 8);
  CHECK(b.kernels.attention->aux_bytes ==
        static_cast<std::uint64_t>(rows * (2 * 2 * 8 + 4) + 4 * dq + (4 + 2) * dq + 2 * kv * (4 + 2)));
  CHECK(b.kernels.launches == 5);  // D, main, dQ conversion, the dK and dV reductions
  CHECK(f.kernels.launches == 1);
  CHECK(cost::attention_backward({2, 16, 8}, {2, 32, 8}, {2, 32, 8}, DType::bf16, none).kernels.launches ==
        3);
}

TEST_CASE("causal masking scales attention cost by the allowed fraction") {
  constexpr std::int64_t n = 8, d = 16, batch = 3;
  SUBCASE("diagonal block: n(n+1)/2 of n² pairs allowed -> fraction (n+1)/(2n)") {
    // Same positions for rows and columns (any offset): row i sees columns 0..i, i+1 of them.
    const auto pos = iota_positions(40, n);
    const Mask m{true, &pos, &pos};
    CHECK(m.unmasked_fraction() == doctest::Approx(double(n + 1) / double(2 * n)));
    const double frac = double(n + 1) / double(2 * n);
    CHECK(cost::attention_forward({batch, n, d}, {batch, n, d}, {batch, n, d}, DType::f32, m).flops ==
          doctest::Approx(4.0 * n * n * d * batch * frac));
    CHECK(cost::attention_backward({batch, n, d}, {batch, n, d}, {batch, n, d}, DType::f32, m).flops ==
          doctest::Approx(10.0 * n * n * d * batch * frac));
  }
  SUBCASE("block strictly below the diagonal: every pair allowed") {
    const auto rows = iota_positions(n, n), cols = iota_positions(0, n);
    const Mask m{true, &rows, &cols};
    CHECK(cost::attention_forward({1, n, d}, {1, n, d}, {1, n, d}, DType::f32, m).flops ==
          doctest::Approx(4.0 * n * n * d));
  }
  SUBCASE("block above the diagonal is fully masked: zero cost") {
    const auto rows = iota_positions(0, n), cols = iota_positions(n, n);
    const Mask m{true, &rows, &cols};
    const OpCost f = cost::attention_forward({1, n, d}, {1, n, d}, {1, n, d}, DType::f32, m);
    const OpCost b = cost::attention_backward({1, n, d}, {1, n, d}, {1, n, d}, DType::f32, m);
    CHECK(f.flops == 0);
    CHECK(f.bytes() == 0);
    CHECK(b.flops == 0);
    CHECK(b.bytes() == 0);
  }
  SUBCASE("mask positions must match the block") {
    const auto pos = iota_positions(0, n - 1);
    const Mask m{true, &pos, &pos};
    CHECK_THROWS_AS((void)cost::attention_forward({1, n, d}, {1, n, d}, {1, n, d}, DType::f32, m),
                    RuntimeError);
  }
}

TEST_CASE("memory-bound ops: bytes are inputs plus outputs in the dtype's size") {
  // [2, 3, 4] = 24 elements.
  const Shape x{2, 3, 4};
  CHECK(cost::softmax(x, DType::f32).bytes_read == 24 * 4);
  CHECK(cost::softmax(x, DType::f32).bytes_written == 24 * 4);
  CHECK(cost::softmax_backward(x, DType::f64).bytes_read == 2 * 24 * 8);  // y and dy
  CHECK(cost::add(x, DType::bf16).bytes() == 3 * 24 * 2);                 // a, b -> out
  CHECK(cost::copy(x, DType::f16).bytes() == 2 * 24 * 2);
  CHECK(cost::fill(x, DType::f32).bytes() == 24 * 4);
  CHECK(cost::fill(x, DType::f32).flops == 0);
  // layer_norm reads x, gamma, beta ([4] each) and writes y, mean, rstd ([6] each).
  CHECK(cost::layer_norm(x, DType::f32).bytes_read == (24 + 2 * 4) * 4);
  CHECK(cost::layer_norm(x, DType::f32).bytes_written == (24 + 2 * 6) * 4);
  // merge as PyTorch kernels on an fp32 accumulator (o [2, 3, 4], lse [2, 3]): o − o_blk, sigmoid·(…),
  // o − (…) read 2 + 1 + 2 and write 3 floats per element; three lse kernels a float each way per row.
  CHECK(cost::merge_attention(x, DType::f32).bytes_read == (5 * 24 + 3 * 6) * 4);
  CHECK(cost::merge_attention(x, DType::f32).bytes_written == (3 * 24 + 3 * 6) * 4);
  // bf16: the block is cast first (2 bytes read, 4 written per element); half the rows, sliced: the
  // result is copied back (4 + 4 more), and only those rows move.
  CHECK(cost::merge_attention(x, DType::bf16).bytes_read == (2 + 5 * 4) * 24 + 3 * 4 * 6);
  CHECK(cost::merge_attention(x, DType::bf16, 0.5).bytes_read == ((2 + 6 * 4) * 24 + 3 * 4 * 6) / 2);
  CHECK(cost::merge_attention(x, DType::bf16, 0.5).bytes_written == ((5 * 4) * 24 + 3 * 4 * 6) / 2);
  CHECK(cost::merge_attention(x, DType::bf16).kernels.launches == 6);
  // Every flop count grows with the element count (a few flops per element).
  for (const OpCost& c :
       {cost::softmax(x, DType::f32), cost::softmax_backward(x, DType::f32), cost::gelu(x, DType::f32),
        cost::gelu_backward(x, DType::f32), cost::layer_norm(x, DType::f32), cost::add(x, DType::f32),
        cost::swiglu(x, DType::f32), cost::swiglu_backward(x, DType::f32)}) {
    CHECK(c.flops >= 24);
    CHECK(c.flops <= 20 * 24);
  }
  // SwiGLU reads its two operands (and dy backward) and writes y (dgate and dup backward), 4 bytes each.
  CHECK(cost::swiglu(x, DType::f32).bytes_read == 2 * 24 * 4);
  CHECK(cost::swiglu(x, DType::f32).bytes_written == 24 * 4);
  CHECK(cost::swiglu_backward(x, DType::f32).bytes_read == 3 * 24 * 4);
  CHECK(cost::swiglu_backward(x, DType::f32).bytes_written == 2 * 24 * 4);
}

TEST_CASE("dropout: reads its input (and the residual), writes the output and a byte of mask per element") {
  // [2, 3, 4] = 24 elements in bf16: the mask is PyTorch's bool tensor, one byte each, written forward and
  // read backward.
  const Shape x{2, 3, 4};
  CHECK(cost::dropout(x, DType::bf16, false).bytes_read == 24 * 2);
  CHECK(cost::dropout(x, DType::bf16, false).bytes_written == 24 * 2 + 24);
  CHECK(cost::dropout(x, DType::bf16, true).bytes_read == 2 * 24 * 2);  // fused with the residual add
  CHECK(cost::dropout(x, DType::bf16, true).bytes_written == 24 * 2 + 24);
  CHECK(cost::dropout_backward(x, DType::f32).bytes_read == 24 * 4 + 24);
  CHECK(cost::dropout_backward(x, DType::f32).bytes_written == 24 * 4);
  CHECK(cost::dropout(x, DType::bf16, true).op_class == OpClass::elementwise);
  CHECK(cost::dropout_backward(x, DType::bf16).op_class == OpClass::elementwise);
}

TEST_CASE("linear is a gemm of 2 rows in out flops") {
  // x [10, 6], w [4, 6]: y = x wᵀ is 10*4 dot products of length 6.
  const OpCost l = cost::linear({10, 6}, {4, 6}, false, DType::f32);
  CHECK(l.op_class == OpClass::gemm);
  CHECK(l.flops == doctest::Approx(2.0 * 10 * 6 * 4));
  CHECK(l.bytes_written == 10 * 4 * 4);
  // The bias adds one add per output.
  CHECK(cost::linear({10, 6}, {4, 6}, true, DType::f32).flops == doctest::Approx(2.0 * 10 * 6 * 4 + 10 * 4));
  // Backward with dx: two gemms of the same size, plus out*in adds to accumulate dw.
  CHECK(cost::linear_backward({10, 6}, {4, 6}, true, false, false, DType::f32).flops ==
        doctest::Approx(2 * 2.0 * 10 * 6 * 4 + 4 * 6));
  CHECK_THROWS_AS((void)cost::linear({10, 6}, {4, 5}, false, DType::f32), RuntimeError);
}

namespace {
// Reference: count the allowed (row, col) pairs one by one.
double brute_force_fraction(const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols) {
  double allowed = 0;
  for (auto r : rows)
    for (auto c : cols) allowed += c <= r ? 1 : 0;
  return rows.empty() || cols.empty() ? 0.0 : allowed / double(rows.size() * cols.size());
}

// Global positions held by `rank` of `p` for a sequence of s tokens in the three layouts of DESIGN.md §5.
std::vector<std::int64_t> layout_positions(const char* layout, int rank, int p, std::int64_t s) {
  std::vector<std::int64_t> pos;
  const std::int64_t chunk = s / p, half = s / (2 * p);
  for (std::int64_t t = 0; t < s; ++t) {
    const std::string l = layout;
    const bool mine = l == "contiguous" ? t / chunk == rank
                      : l == "striped"  ? t % p == rank
                                        : (t / half == rank || t / half == 2 * p - 1 - rank);  // zigzag
    if (mine) pos.push_back(t);
  }
  return pos;
}
}  // namespace

TEST_CASE("the fast unmasked fraction equals a pair-by-pair count for every layout and block") {
  constexpr int p = 4;
  constexpr std::int64_t s = 48;
  for (const char* layout : {"contiguous", "zigzag", "striped"})
    for (int qr = 0; qr < p; ++qr)
      for (int kr = 0; kr < p; ++kr) {
        CAPTURE(layout);
        CAPTURE(qr);
        CAPTURE(kr);
        const auto rows = layout_positions(layout, qr, p, s), cols = layout_positions(layout, kr, p, s);
        const Positions row_pos(rows), col_pos(cols);
        const Mask m{true, &row_pos, &col_pos};
        CHECK(m.unmasked_fraction() == doctest::Approx(brute_force_fraction(rows, cols)));
      }
  // Unsorted positions take the general path.
  const std::vector<std::int64_t> rows{5, 1, 9, 3}, cols{4, 0, 8, 2, 6};
  const Positions row_pos(rows), col_pos(cols);
  CHECK(Mask{true, &row_pos, &col_pos}.unmasked_fraction() ==
        doctest::Approx(brute_force_fraction(rows, cols)));
  CHECK(Mask{}.unmasked_fraction() == 1.0);
}

// The launch an implementation makes for one ring step's block (runtime/cost.hpp: attention_launch),
// for each layout of 32 tokens over P = 4 ranks, derived by hand from the positions.
TEST_CASE("attention launches: contiguous, zigzag and striped blocks as ring implementations launch them") {
  using L = AttentionLaunch;
  const auto positions = [](std::initializer_list<std::pair<std::int64_t, std::int64_t>> ranges,
                            std::int64_t stride = 1) {
    std::vector<std::int64_t> p;
    for (auto [first, count] : ranges)
      for (std::int64_t i = 0; i < count; ++i) p.push_back(first + i * stride);
    return p;
  };
  const auto launch_of = [](const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols) {
    const auto n = static_cast<std::int64_t>(rows.size()), m = static_cast<std::int64_t>(cols.size());
    const Positions row_pos(rows), col_pos(cols);
    const Mask mask{true, &row_pos, &col_pos};
    return cost::attention_forward({2, n, 16}, {1, m, 16}, {1, m, 16}, DType::bf16, mask).kernels;
  };
  SUBCASE("contiguous: the own block is causal, an earlier owner unmasked, a later one skipped") {
    const auto r2 = positions({{16, 8}}), r1 = positions({{8, 8}}), r3 = positions({{24, 8}});
    const L own = *launch_of(r2, r2).attention;
    CHECK(own.mask == L::Mask::causal);
    CHECK(own.offset == 0);
    CHECK(own.aux_bytes == 0);
    CHECK(launch_of(r2, r1).attention->mask == L::Mask::none);
    CHECK(launch_of(r2, r3).launches == 0);  // skipped: no kernel
    CHECK_FALSE(launch_of(r2, r3).attention);
    // Queries 2..9 against keys 0..3: key j visible to query i iff j <= i + 2; every row sees a key and
    // every key is seen, so nothing is sliced (no copies) though the offset is not sk − sq = −4.
    const auto rows = positions({{2, 8}}), keys = positions({{0, 4}});
    const L shifted = *launch_of(rows, keys).attention;
    CHECK(shifted.mask == L::Mask::causal);
    CHECK(shifted.offset == 2);
    CHECK(shifted.sq == 8);
    CHECK(shifted.sk == 4);
    CHECK(shifted.aux_bytes == 0);
  }
  SUBCASE("zigzag: own block causal, earlier owner's first half, later owner's second half of the queries") {
    // 8 chunks of 4: rank r holds chunks r and 7 − r.
    const auto rank1 = positions({{4, 4}, {24, 4}}), rank0 = positions({{0, 4}, {28, 4}}),
               rank2 = positions({{8, 4}, {20, 4}});
    const L own = *launch_of(rank1, rank1).attention;
    CHECK(own.mask == L::Mask::causal);
    CHECK(own.sq == 8);
    CHECK(own.sk == 8);
    CHECK(own.active_rows == 1);
    // Owner 0 (earlier): chunk 0 is seen by both query chunks, chunk 7 by neither → all 8 queries ×
    // the first 4 keys, unmasked.
    const L early = *launch_of(rank1, rank0).attention;
    CHECK(early.mask == L::Mask::none);
    CHECK(early.sq == 8);
    CHECK(early.sk == 4);
    CHECK(early.active_rows == 1);
    // Owner 2 (later): only query chunk 6 (positions 24..27) sees keys, all 8 of them → 4 × 8.
    const L late = *launch_of(rank1, rank2).attention;
    CHECK(late.mask == L::Mask::none);
    CHECK(late.sq == 4);
    CHECK(late.sk == 8);
    CHECK(late.active_rows == 0.5);
    // The merge of that block merges (and copies back) half the rows.
    CHECK(cost::merge_attention({2, 8, 16}, DType::bf16, late.active_rows).bytes() ==
          cost::merge_attention({2, 4, 16}, DType::bf16, 0.5).bytes() * 2);
  }
  SUBCASE("striped: causal on the whole block; a later owner needs offset −1, run on sliced views") {
    // Token t on rank t mod 4: rank 1 holds 1, 5, …, 29.
    const auto rank1 = positions({{1, 8}}, 4), rank0 = positions({{0, 8}}, 4), rank2 = positions({{2, 8}}, 4);
    const L own = *launch_of(rank1, rank1).attention;
    CHECK(own.mask == L::Mask::causal);
    CHECK(own.offset == 0);
    const L early = *launch_of(rank1, rank0).attention;  // key 4j <= query 4i + 1 iff j <= i
    CHECK(early.mask == L::Mask::causal);
    CHECK(early.offset == 0);
    CHECK(early.aux_bytes == 0);
    // key 4j + 2 <= 4i + 1 iff j <= i − 1: query 0 sees nothing; the kernel runs q[1:] × k[:-1]
    // causally (7 × 7, offset 0) on views of q, k, v: nothing is copied.
    const L late = *launch_of(rank1, rank2).attention;
    CHECK(late.mask == L::Mask::causal);
    CHECK(late.sq == 7);
    CHECK(late.sk == 7);
    CHECK(late.offset == 0);
    CHECK(late.active_rows == doctest::Approx(7.0 / 8));
    CHECK(late.aux_bytes == 0);
    CHECK(launch_of(rank1, rank2).launches == 1);
  }
}
