// EventTimer: named GPU intervals bracketed by CUDA events on a stream, summed per name.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/cuda/cuda_device.hpp"

namespace spsim::rt::cuda_detail {

class EventTimer {
 public:
  EventTimer() = default;
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void begin(std::string_view name, cudaStream_t stream);
  // Closes the most recent open interval called `name`; unknown names are ignored. Never throws (it
  // runs in destructors): a CUDA error is kept and rethrown by the next totals().
  void end(std::string_view name, cudaStream_t stream) noexcept;
  // Waits for the closed intervals and returns the per-name sums, in order of first completion.
  [[nodiscard]] std::vector<TimedInterval> totals();
  void reset() noexcept;

 private:
  struct Interval {
    std::string name;
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
  };
  void add_total(const std::string& name, double ms);
  std::vector<Interval> open_, closed_;
  std::vector<TimedInterval> totals_;
  std::string deferred_error_;
};

}  // namespace spsim::rt::cuda_detail
