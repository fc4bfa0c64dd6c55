// Comm: the default coalesced all-reduce (one all_reduce per tensor, one Work for them all).
#include "runtime/comm.hpp"

namespace spsim::rt {

namespace {

class AllWork final : public Work::Impl {
 public:
  explicit AllWork(std::vector<Work> parts) : parts_(std::move(parts)) {}
  void wait() override {
    for (auto& w : parts_) w.wait();
  }

 private:
  std::vector<Work> parts_;
};

}  // namespace

Work Comm::all_reduce_coalesced(std::vector<Tensor>& inout) {
  std::vector<Work> parts;
  parts.reserve(inout.size());
  for (auto& t : inout) parts.push_back(all_reduce(t));
  return Work(std::make_shared<AllWork>(std::move(parts)));
}

}  // namespace spsim::rt
