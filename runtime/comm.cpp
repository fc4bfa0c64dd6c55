// Comm: the default coalesced all-reduce (one all_reduce per tensor, one Work for them all), and the
// chunk-stride rule every backend packs by.
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

bool chunks_strided(const Shape& shape, int dim, int parts) {
  if (parts < 2) return false;
  const auto k = static_cast<std::size_t>(dim < 0 ? dim + static_cast<int>(shape.size()) : dim);
  for (std::size_t i = 0; i < k && i < shape.size(); ++i)
    if (shape[i] > 1) return true;
  return false;
}

Work Comm::all_reduce_coalesced(std::vector<Tensor>& inout) {
  std::vector<Work> parts;
  parts.reserve(inout.size());
  for (auto& t : inout) parts.push_back(all_reduce(t));
  return Work(std::make_shared<AllWork>(std::move(parts)));
}

}  // namespace spsim::rt
