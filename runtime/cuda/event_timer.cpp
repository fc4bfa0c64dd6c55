// Named GPU intervals measured with CUDA events.
#include "runtime/cuda/detail/event_timer.hpp"

#include <algorithm>

#include "runtime/cuda/detail/check.hpp"

namespace spsim::rt::cuda_detail {

namespace {
void destroy(cudaEvent_t& e) noexcept {
  if (e) cudaEventDestroy(e);
  e = nullptr;
}
}  // namespace

EventTimer::~EventTimer() {
  reset();
}

void EventTimer::reset() noexcept {
  for (auto* list : {&open_, &closed_})
    for (auto& iv : *list) {
      destroy(iv.start);
      destroy(iv.stop);
    }
  open_.clear();
  closed_.clear();
  totals_.clear();
  deferred_error_.clear();
}

void EventTimer::begin(std::string_view name, cudaStream_t stream) {
  Interval iv{std::string(name), nullptr, nullptr};
  SPSIM_CUDA_CHECK(cudaEventCreate(&iv.start));
  if (const cudaError_t err = cudaEventRecord(iv.start, stream); err != cudaSuccess) {
    destroy(iv.start);
    check_cuda(err, "cudaEventRecord(start)", __FILE__, __LINE__);
  }
  open_.push_back(std::move(iv));
}

void EventTimer::end(std::string_view name, cudaStream_t stream) noexcept {
  const auto it =
      std::find_if(open_.rbegin(), open_.rend(), [&](const Interval& iv) { return iv.name == name; });
  if (it == open_.rend()) return;
  Interval iv = std::move(*it);
  open_.erase(std::next(it).base());
  cudaError_t err = cudaEventCreate(&iv.stop);
  if (err == cudaSuccess) err = cudaEventRecord(iv.stop, stream);
  if (err != cudaSuccess) {
    if (deferred_error_.empty())
      deferred_error_ = std::string("timing phase ") + iv.name + ": " + cudaGetErrorString(err);
    destroy(iv.start);
    destroy(iv.stop);
    return;
  }
  closed_.push_back(std::move(iv));
}

void EventTimer::add_total(const std::string& name, double ms) {
  auto it =
      std::find_if(totals_.begin(), totals_.end(), [&](const TimedInterval& t) { return t.name == name; });
  if (it == totals_.end()) {
    totals_.push_back({name, 0.0, 0});
    it = std::prev(totals_.end());
  }
  it->milliseconds += ms;
  it->count += 1;
}

std::vector<TimedInterval> EventTimer::totals() {
  if (!deferred_error_.empty()) throw RuntimeError(deferred_error_);
  for (auto& iv : closed_) {
    float ms = 0;
    SPSIM_CUDA_CHECK(cudaEventSynchronize(iv.stop));
    SPSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, iv.start, iv.stop));
    add_total(iv.name, ms);
    destroy(iv.start);
    destroy(iv.stop);
  }
  closed_.clear();
  return totals_;
}

}  // namespace spsim::rt::cuda_detail
