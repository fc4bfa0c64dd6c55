// Weight-gradient reduction in buckets, overlapped with backward, the way PyTorch DDP does it.
//
// DDP groups parameters into buckets of about `bucket_cap_mb` (25 MB by default) in reverse order of
// their registration — roughly the order backward finishes their gradients — and all-reduces a bucket
// as soon as every gradient in it is final, while backward goes on with earlier layers; the optimizer
// waits for all buckets at the end of the step. GradBuckets is that schedule: the layer code hands over
// each gradient the moment it is final (`ready`), a bucket is posted as one coalesced all-reduce
// (Comm::all_reduce_coalesced) once it holds at least the cap, and `finish` posts the last, partial
// bucket and waits for them all. The group is every rank that holds the weight (or its shard) and computed
// a part of its gradient: the gradient is the sum over them (strategies/layer_strategy.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/comm.hpp"

namespace spsim::strategies {

class GradBuckets {
 public:
  static constexpr std::uint64_t kDefaultCapBytes = 25ull << 20;  // DDP's bucket_cap_mb = 25

  explicit GradBuckets(rt::Comm& comm, std::uint64_t cap_bytes = kDefaultCapBytes);
  GradBuckets(const GradBuckets&) = delete;
  GradBuckets& operator=(const GradBuckets&) = delete;
  ~GradBuckets();  // waits for whatever is still in flight

  // `grad` is final; it is summed over the group in place (valid after finish()).
  void ready(rt::Tensor grad);
  // Posts the open bucket (if any).
  void flush() { post(); }
  // Posts the open bucket and waits for every bucket.
  void finish();

  [[nodiscard]] int buckets_posted() const { return posted_; }

 private:
  void post();
  rt::Comm& comm_;
  std::uint64_t cap_bytes_;
  std::vector<rt::Tensor> open_;
  std::uint64_t open_bytes_ = 0;
  std::vector<rt::Work> in_flight_;
  int posted_ = 0;
};

}  // namespace spsim::strategies
