// GradBuckets: DDP-style bucketed, overlapped weight-gradient all-reduce (see grad_buckets.hpp).
#include "strategies/grad_buckets.hpp"

#include <utility>

namespace spsim::strategies {

GradBuckets::GradBuckets(rt::Comm& comm, std::uint64_t cap_bytes) : comm_(comm), cap_bytes_(cap_bytes) {
  if (cap_bytes_ == 0) throw rt::RuntimeError("gradient bucket cap must be positive");
}

GradBuckets::~GradBuckets() {
  // Normally finish() has run; after an exception the posted operations still have to complete
  // before their buffers go away.
  for (auto& w : in_flight_) {
    try {
      w.wait();
    } catch (...) {  // NOLINT(bugprone-empty-catch): already unwinding from the first failure
    }
  }
}

void GradBuckets::ready(rt::Tensor grad) {
  open_bytes_ += grad.nbytes();
  open_.push_back(std::move(grad));
  if (open_bytes_ >= cap_bytes_) post();
}

void GradBuckets::post() {
  if (open_.empty()) return;
  in_flight_.push_back(comm_.all_reduce_coalesced(open_));
  ++posted_;
  open_.clear();
  open_bytes_ = 0;
}

void GradBuckets::finish() {
  post();
  for (auto& w : in_flight_) w.wait();
  in_flight_.clear();
}

}  // namespace spsim::strategies
