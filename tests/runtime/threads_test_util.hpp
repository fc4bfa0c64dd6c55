// Helpers for the threads backend tests: host tensors from formulas, per-rank results, exceptions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/host_storage.hpp"
#include "runtime/threads/threads_comm.hpp"

namespace spsim::test {

// The rank-dependent input every test uses: exact in float32 for every size tested here (< 2^24).
[[nodiscard]] inline double value(int rank, std::int64_t i) {
  return rank * 1000.0 + static_cast<double>(i);
}

// Sum over ranks 0..P-1 of value(rank, i) = 1000 * P(P-1)/2 + P * i.
[[nodiscard]] inline double sum_of_values(int p, std::int64_t i) {
  return 1000.0 * p * (p - 1) / 2.0 + p * static_cast<double>(i);
}

template <class T>
[[nodiscard]] rt::Tensor make_tensor(const rt::Shape& shape, const std::function<double(std::int64_t)>& f) {
  rt::Tensor t = rt::make_host_tensor(shape, rt::dtype_of<T>());
  T* p = t.data<T>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(f(i));
  return t;
}

template <class T>
[[nodiscard]] std::vector<double> values_of(const rt::Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<double>(p, p + t.numel());
}

// Runs body on P ranks and returns each rank's result tensor as doubles, indexed by rank.
template <class T>
[[nodiscard]] std::vector<std::vector<double>> on_ranks(int p,
                                                        const std::function<rt::Tensor(rt::Comm&)>& body) {
  std::vector<std::vector<double>> results(static_cast<std::size_t>(p));
  rt::run_ranks(
      p, [&](rt::Comm& comm) { results[static_cast<std::size_t>(comm.rank())] = values_of<T>(body(comm)); });
  return results;
}

// "" if results[r][k] == expected(r, k) for every rank r and k < n, else the first difference.
[[nodiscard]] inline std::string mismatch(const std::vector<std::vector<double>>& results, std::int64_t n,
                                          const std::function<double(int, std::int64_t)>& expected) {
  for (std::size_t r = 0; r < results.size(); ++r) {
    const auto& got = results[r];
    if (std::ssize(got) != n)
      return "rank " + std::to_string(r) + " has " + std::to_string(got.size()) + " elements, expected " +
             std::to_string(n);
    for (std::int64_t k = 0; k < n; ++k) {
      const double want = expected(static_cast<int>(r), k);
      if (got[static_cast<std::size_t>(k)] != want)
        return "rank " + std::to_string(r) + " element " + std::to_string(k) + ": got " +
               std::to_string(got[static_cast<std::size_t>(k)]) + ", expected " + std::to_string(want);
    }
  }
  return "";
}

// The exception f throws, as the most specific of the types the tests care about plus what().
struct Thrown {
  std::string type;  // "none", "GroupAborted", "RuntimeError", "runtime_error", "other"
  std::string what;
  [[nodiscard]] bool says(const std::string& part) const { return what.find(part) != std::string::npos; }
};

[[nodiscard]] inline Thrown thrown_by(const std::function<void()>& f) {
  try {
    f();
  } catch (const rt::GroupAborted& e) {
    return {"GroupAborted", e.what()};
  } catch (const rt::RuntimeError& e) {
    return {"RuntimeError", e.what()};
  } catch (const std::runtime_error& e) {
    return {"runtime_error", e.what()};
  } catch (...) {
    return {"other", ""};
  }
  return {"none", ""};
}

}  // namespace spsim::test
