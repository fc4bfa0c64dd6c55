// HostStagedComm: device tensors through a host communicator.
#include "runtime/host_staged_comm.hpp"

#include <functional>
#include <utility>

#include "runtime/host_storage.hpp"

namespace spsim::rt {

namespace {

// Waits for the host operation, then runs `then` (copies results back to the device).
class ThenWork final : public Work::Impl {
 public:
  ThenWork(Work inner, std::function<void()> then) : inner_(std::move(inner)), then_(std::move(then)) {}
  void wait() override {
    inner_.wait();
    if (then_) std::exchange(then_, nullptr)();
  }

 private:
  Work inner_;
  std::function<void()> then_;
};

}  // namespace

HostStagedComm::HostStagedComm(Comm& host_comm, Device& device) : inner_(host_comm), dev_(device) {}
HostStagedComm::HostStagedComm(std::unique_ptr<Comm> owned, Device& device)
    : owned_(std::move(owned)), inner_(*owned_), dev_(device) {}
HostStagedComm::~HostStagedComm() = default;

Tensor HostStagedComm::host_like(const Tensor& t) {
  return rt::make_host_tensor(t.shape(), dev_.dtype());
}

Tensor HostStagedComm::to_host(const Tensor& t) {
  Tensor h = host_like(t);
  const std::vector<double> values = dev_.to_host(t);
  if (h.dtype() == rt::DType::f64)
    std::copy(values.begin(), values.end(), h.data<double>());
  else
    for (std::size_t i = 0; i < values.size(); ++i) h.data<float>()[i] = static_cast<float>(values[i]);
  return h;
}

Work HostStagedComm::copy_back(Work inner, Tensor host, Tensor dst) {
  auto then = [this, host = std::move(host), dst]() mutable {
    std::vector<double> values(static_cast<std::size_t>(host.numel()));
    if (host.dtype() == rt::DType::f64)
      std::copy_n(host.data<double>(), values.size(), values.begin());
    else
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = host.data<float>()[i];
    Tensor staged = dev_.from_host(values, dst.shape());
    dev_.copy(staged, dst);
  };
  return Work(std::make_shared<ThenWork>(std::move(inner), std::move(then)));
}

Work HostStagedComm::all_reduce(Tensor& inout) {
  Tensor h = to_host(inout);
  Work w = inner_.all_reduce(h);
  return copy_back(std::move(w), h, inout);
}
Work HostStagedComm::reduce_scatter(const Tensor& in, Tensor& out, int dim) {
  Tensor h_out = host_like(out);
  Work w = inner_.reduce_scatter(to_host(in), h_out, dim);
  return copy_back(std::move(w), h_out, out);
}
Work HostStagedComm::all_gather(const Tensor& in, Tensor& out, int dim) {
  Tensor h_out = host_like(out);
  Work w = inner_.all_gather(to_host(in), h_out, dim);
  return copy_back(std::move(w), h_out, out);
}
Work HostStagedComm::all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) {
  Tensor h_out = host_like(out);
  Work w = inner_.all_to_all(to_host(in), h_out, split_dim, concat_dim);
  return copy_back(std::move(w), h_out, out);
}
Work HostStagedComm::send(const Tensor& t, int dst, int tag) {
  return inner_.send(to_host(t), dst, tag);
}
Work HostStagedComm::recv(Tensor& t, int src, int tag) {
  Tensor h = host_like(t);
  Work w = inner_.recv(h, src, tag);
  return copy_back(std::move(w), h, t);
}
Work HostStagedComm::sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag) {
  Tensor h_in = host_like(in);
  Work w = inner_.sendrecv(to_host(out), dst, h_in, src, tag);
  return copy_back(std::move(w), h_in, in);
}
std::unique_ptr<Comm> HostStagedComm::split(const std::vector<int>& color_of_rank) {
  return std::unique_ptr<Comm>(new HostStagedComm(inner_.split(color_of_rank), dev_));
}

}  // namespace spsim::rt
