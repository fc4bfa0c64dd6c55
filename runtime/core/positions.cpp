// Positions as arithmetic runs (see positions.hpp).
#include "runtime/core/positions.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/core/types.hpp"

namespace spsim::rt {

namespace {

__extension__ using Wide = unsigned __int128;

// Σ_{i<n} floor((slope·i + offset) / m) for n ≥ 0, m ≥ 1, slope ≥ 0, offset ≥ 0, by the Euclid-like
// reduction: whole multiples of m in the slope and the offset come out as arithmetic sums, and the
// rest is the same sum with the roles of m and the slope exchanged (the lattice points under the line
// counted along the other axis), so it takes O(log m) rounds.
[[nodiscard]] Wide floor_sum(Wide n, Wide m, Wide slope, Wide offset) {
  Wide sum = 0;
  while (n > 0) {
    if (slope >= m) {
      sum += n * (n - 1) / 2 * (slope / m);
      slope %= m;
    }
    if (offset >= m) {
      sum += n * (offset / m);
      offset %= m;
    }
    const Wide top = slope * n + offset;  // the line's value at i = n
    if (top < m) break;
    n = top / m;
    offset = top % m;
    std::swap(m, slope);
  }
  return sum;
}

}  // namespace

Positions::Positions(std::initializer_list<std::int64_t> list)
    : Positions(std::span<const std::int64_t>(list.begin(), list.size())) {}

Positions::Positions(std::span<const std::int64_t> list) {
  for (const std::int64_t p : list) push(p);
}

Positions Positions::range(std::int64_t first, std::int64_t count) {
  Positions p;
  if (count > 0) p.push_run({first, 1, count});
  return p;
}

Positions Positions::of_runs(std::span<const Run> runs) {
  Positions p;
  p.reserve(2 * runs.size());  // a run adds at most two (its first position may end the run before)
  for (const Run& r : runs)
    if (r.count > 0) p.push_run(r);
  return p;
}

void Positions::append(const Positions& other) {
  for (const Run& r : other.runs_) push_run(r);
}

Positions Positions::slice(std::int64_t begin, std::int64_t count) const {
  if (begin < 0 || count < 0 || begin > size_ - count)
    throw RuntimeError("Positions: slice [" + std::to_string(begin) + ", +" + std::to_string(count) +
                       ") out of range for " + std::to_string(size_) + " positions");
  Positions out;
  const std::int64_t end = begin + count;
  for (std::size_t k = 0; k < runs_.size() && starts_[k] < end; ++k) {
    const std::int64_t lo = std::max(begin, starts_[k]), hi = std::min(end, starts_[k] + runs_[k].count);
    if (hi > lo)
      out.push_run({runs_[k].first + (lo - starts_[k]) * runs_[k].stride, runs_[k].stride, hi - lo});
  }
  return out;
}

void Positions::reserve(std::size_t runs) {
  runs_.reserve(runs);
  starts_.reserve(runs);
}

void Positions::push(std::int64_t p) {
  if (size_ == 0) {
    min_ = max_ = p;
  } else {
    if (p <= runs_.back().last()) ascending_ = false;
    min_ = std::min(min_, p);
    max_ = std::max(max_, p);
  }
  if (!runs_.empty()) {
    Run& last = runs_.back();
    if (last.count == 1 && p > last.first) {
      last.stride = p - last.first;
      last.count = 2;
      ++size_;
      return;
    }
    if (last.count >= 2 && p - last.last() == last.stride) {
      ++last.count;
      ++size_;
      return;
    }
  }
  runs_.push_back({p, 1, 1});
  starts_.push_back(size_);
  ++size_;
}

void Positions::push_run(const Run& r) {
  if (r.count >= 2 && r.stride < 1)
    throw RuntimeError("Positions: a run of " + std::to_string(r.count) +
                       " positions needs a stride >= 1, got " + std::to_string(r.stride));
  push(r.first);
  const std::int64_t rest = r.count - 1;  // r.first + r.stride, … follow
  if (rest <= 0) return;
  max_ = std::max(max_, r.last());
  Run& last = runs_.back();  // holds r.first as its last position
  if (last.count == 1 || last.stride == r.stride) {
    // Greedy: the step from r.first to its successor is r.stride, so the run goes on through r.
    last.stride = r.stride;
    last.count += rest;
  } else {
    // The run that ended at r.first does not continue; r's rest starts its own.
    runs_.push_back({r.first + r.stride, rest >= 2 ? r.stride : 1, rest});
    starts_.push_back(size_);
  }
  size_ += rest;
}

std::int64_t Positions::operator[](std::int64_t i) const {
  if (i < 0 || i >= size_)
    throw RuntimeError("Positions: index " + std::to_string(i) + " out of range for " +
                       std::to_string(size_) + " positions");
  const auto k = static_cast<std::size_t>(std::ranges::upper_bound(starts_, i) - starts_.begin()) - 1;
  return runs_[k].first + (i - starts_[k]) * runs_[k].stride;
}

std::vector<std::int64_t> Positions::expand() const {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(size_));
  for (const Run& r : runs_)
    for (std::int64_t i = 0; i < r.count; ++i) out.push_back(r.first + i * r.stride);
  return out;
}

std::int64_t causal_pairs(const Positions::Run& rows, const Positions::Run& cols) {
  const std::int64_t a = rows.first, s = rows.stride, n = rows.count;
  const std::int64_t b = cols.first, t = cols.stride, m = cols.count;
  if (n <= 0 || m <= 0) return 0;
  // Row i (position a + i·s) sees f(i) = clamp(floor((a + i·s − b) / t) + 1, 0, m) columns, which
  // grows with i: none before i_lo (a + i·s < b), all m from i_hi (a + i·s ≥ the last column).
  const std::int64_t to_first = b - a, to_last = b + (m - 1) * t - a;
  const std::int64_t i_lo = std::min(n, to_first <= 0 ? 0 : ceil_div(to_first, s));
  const std::int64_t i_hi = std::clamp(to_last <= 0 ? 0 : ceil_div(to_last, s), i_lo, n);
  const std::int64_t len = i_hi - i_lo;
  const Wide partial = floor_sum(static_cast<Wide>(len), static_cast<Wide>(t), static_cast<Wide>(s),
                                 static_cast<Wide>(a + i_lo * s - b)) +
                       static_cast<Wide>(len);
  return static_cast<std::int64_t>(partial) + (n - i_hi) * m;
}

std::int64_t causal_pairs(const Positions& rows, const Positions& cols) {
  if (rows.empty() || cols.empty()) return 0;
  if (cols.max() <= rows.min()) return rows.size() * cols.size();  // every key precedes every query
  if (cols.min() > rows.max()) return 0;                           // every key follows every query
  std::int64_t pairs = 0;
  for (const Positions::Run& r : rows.runs())
    for (const Positions::Run& c : cols.runs()) pairs += causal_pairs(r, c);
  return pairs;
}

}  // namespace spsim::rt
