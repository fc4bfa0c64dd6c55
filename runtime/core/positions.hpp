// Global token positions of a block's query rows or key columns, held as arithmetic runs.
//
// Every layout the strategies use is a handful of runs: contiguous [r·n, (r+1)·n) is one run of stride
// 1, zigzag two, striped (token t on rank t mod P) one run of stride P, and a gathered sequence the
// concatenation of its owners' runs. Masks are counted on the runs (causal_pairs) in
// O(runs_rows × runs_cols · log), never by visiting or sorting positions, so a trace of thousands of
// ranks costs what its runs cost, not what its tokens cost.
//
// The runs are canonical: the greedy maximal progressions of the list (from the first position, a run
// takes the step to the next one and extends while the step repeats; a lone position has stride 1).
// Building from runs or from the expanded list gives the same runs, so anything decided from them (the
// launch shapes of runtime/cost.cpp) does not depend on how a layout produced its positions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace spsim::rt {

class Positions {
 public:
  // first + i·stride for i < count; stride ≥ 1 (1 for a lone position).
  struct Run {
    std::int64_t first = 0, stride = 1, count = 0;
    [[nodiscard]] std::int64_t last() const { return first + (count - 1) * stride; }
    friend bool operator==(const Run&, const Run&) = default;
  };

  Positions() = default;
  Positions(std::initializer_list<std::int64_t> list);
  explicit Positions(std::span<const std::int64_t> list);
  explicit Positions(const std::vector<std::int64_t>& list)
      : Positions(std::span<const std::int64_t>(list)) {}
  // [first, first + count)
  [[nodiscard]] static Positions range(std::int64_t first, std::int64_t count);
  // The positions of `runs` in order (runs of count 0 are dropped).
  [[nodiscard]] static Positions of_runs(std::span<const Run> runs);

  // Appends the positions of `other` after these.
  void append(const Positions& other);
  // Positions begin … begin + count − 1 of these, in order (O(runs); needs 0 ≤ begin and
  // begin + count ≤ size(), else RuntimeError).
  [[nodiscard]] Positions slice(std::int64_t begin, std::int64_t count) const;

  [[nodiscard]] std::int64_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // The i-th position, 0 ≤ i < size() (a binary search over the runs).
  [[nodiscard]] std::int64_t operator[](std::int64_t i) const;
  [[nodiscard]] const std::vector<Run>& runs() const { return runs_; }
  // Strictly ascending (every layout's list is).
  [[nodiscard]] bool ascending() const { return ascending_; }
  [[nodiscard]] std::int64_t min() const { return min_; }  // of a non-empty list
  [[nodiscard]] std::int64_t max() const { return max_; }
  [[nodiscard]] std::vector<std::int64_t> expand() const;

 private:
  void reserve(std::size_t runs);  // room for this many runs
  void push(std::int64_t p);    // one more position
  void push_run(const Run& r);  // count more positions (O(1))

  std::vector<Run> runs_;
  std::vector<std::int64_t> starts_;  // index of each run's first position
  std::int64_t size_ = 0, min_ = 0, max_ = 0;
  bool ascending_ = true;
};

// ⌊a / b⌋ and ⌈a / b⌉ for b > 0 and a of either sign (C++'s / rounds toward zero).
[[nodiscard]] inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
[[nodiscard]] inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return -floor_div(-a, b);
}

// The number of pairs (r, c), r in `rows`, c in `cols`, with c ≤ r: a causal mask's allowed pairs.
[[nodiscard]] std::int64_t causal_pairs(const Positions& rows, const Positions& cols);
// The same for one run of each.
[[nodiscard]] std::int64_t causal_pairs(const Positions::Run& rows, const Positions::Run& cols);

}  // namespace spsim::rt
