// TimedComm (per-kind blocked time) and HostStagedComm (device tensors through a host communicator).
#include "analysis/run_comm.hpp"

#include <utility>
#include <vector>

#include "runtime/host_storage.hpp"

namespace spsim::analysis {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Adds the time spent in wait() to the kind's blocked time.
class TimedWork final : public rt::Work::Impl {
 public:
  TimedWork(rt::Work inner, std::shared_ptr<CommStats> stats, CommKind kind)
      : inner_(std::move(inner)), stats_(std::move(stats)), kind_(kind) {}
  void wait() override {
    const auto t0 = Clock::now();
    inner_.wait();
    (*stats_)[static_cast<std::size_t>(kind_)].blocked_s += seconds_since(t0);
  }

 private:
  rt::Work inner_;
  std::shared_ptr<CommStats> stats_;
  CommKind kind_;
};

// Waits for the host operation, then runs `then` (copies results back to the device).
class ThenWork final : public rt::Work::Impl {
 public:
  ThenWork(rt::Work inner, std::function<void()> then) : inner_(std::move(inner)), then_(std::move(then)) {}
  void wait() override {
    inner_.wait();
    if (then_) std::exchange(then_, nullptr)();
  }

 private:
  rt::Work inner_;
  std::function<void()> then_;
};

}  // namespace

// ---- TimedComm ---------------------------------------------------------------------------------

TimedComm::TimedComm(rt::Comm& inner, bool sync_collectives)
    : inner_(inner), stats_(std::make_shared<CommStats>()), sync_collectives_(sync_collectives) {}
TimedComm::TimedComm(std::unique_ptr<rt::Comm> owned, std::shared_ptr<CommStats> stats, bool sync_collectives)
    : owned_(std::move(owned)), inner_(*owned_), stats_(std::move(stats)), sync_collectives_(sync_collectives) {}
TimedComm::~TimedComm() = default;

template <class Post>
rt::Work TimedComm::timed(CommKind kind, double bytes, Post&& post) {
  auto& s = (*stats_)[static_cast<std::size_t>(kind)];
  const bool collective = kind == CommKind::all_reduce || kind == CommKind::reduce_scatter ||
                          kind == CommKind::all_gather || kind == CommKind::all_to_all;
  if (sync_collectives_ && collective) {
    auto& sync = (*stats_)[static_cast<std::size_t>(CommKind::barrier)];
    const auto ts = Clock::now();
    inner_.barrier();
    sync.calls += 1;
    sync.blocked_s += seconds_since(ts);
  }
  const auto t0 = Clock::now();
  rt::Work inner = post();
  s.calls += 1;
  s.bytes += bytes;
  s.blocked_s += seconds_since(t0);
  if (!inner.pending()) return inner;
  return rt::Work(std::make_shared<TimedWork>(std::move(inner), stats_, kind));
}

rt::Work TimedComm::all_reduce(rt::Tensor& inout) {
  return timed(CommKind::all_reduce, static_cast<double>(inout.nbytes()),
               [&] { return inner_.all_reduce(inout); });
}
rt::Work TimedComm::reduce_scatter(const rt::Tensor& in, rt::Tensor& out, int dim) {
  return timed(CommKind::reduce_scatter, static_cast<double>(in.nbytes()),
               [&] { return inner_.reduce_scatter(in, out, dim); });
}
rt::Work TimedComm::all_gather(const rt::Tensor& in, rt::Tensor& out, int dim) {
  return timed(CommKind::all_gather, static_cast<double>(out.nbytes()),
               [&] { return inner_.all_gather(in, out, dim); });
}
rt::Work TimedComm::all_to_all(const rt::Tensor& in, rt::Tensor& out, int split_dim, int concat_dim) {
  return timed(CommKind::all_to_all, static_cast<double>(in.nbytes()),
               [&] { return inner_.all_to_all(in, out, split_dim, concat_dim); });
}
rt::Work TimedComm::send(const rt::Tensor& t, int dst, int tag) {
  return timed(CommKind::send, static_cast<double>(t.nbytes()), [&] { return inner_.send(t, dst, tag); });
}
rt::Work TimedComm::recv(rt::Tensor& t, int src, int tag) {
  return timed(CommKind::recv, static_cast<double>(t.nbytes()), [&] { return inner_.recv(t, src, tag); });
}
rt::Work TimedComm::sendrecv(const rt::Tensor& out, int dst, rt::Tensor& in, int src, int tag) {
  return timed(CommKind::sendrecv, static_cast<double>(out.nbytes()),
               [&] { return inner_.sendrecv(out, dst, in, src, tag); });
}
std::unique_ptr<rt::Comm> TimedComm::split(const std::vector<int>& color_of_rank) {
  return std::unique_ptr<rt::Comm>(new TimedComm(inner_.split(color_of_rank), stats_, sync_collectives_));
}

// ---- HostStagedComm -----------------------------------------------------------------------------

HostStagedComm::HostStagedComm(rt::Comm& host_comm, rt::Device& device) : inner_(host_comm), dev_(device) {}
HostStagedComm::HostStagedComm(std::unique_ptr<rt::Comm> owned, rt::Device& device)
    : owned_(std::move(owned)), inner_(*owned_), dev_(device) {}
HostStagedComm::~HostStagedComm() = default;

rt::Tensor HostStagedComm::host_like(const rt::Tensor& t) {
  return rt::make_host_tensor(t.shape(), dev_.dtype());
}

rt::Tensor HostStagedComm::to_host(const rt::Tensor& t) {
  rt::Tensor h = host_like(t);
  const std::vector<double> values = dev_.to_host(t);
  if (h.dtype() == rt::DType::f64)
    std::copy(values.begin(), values.end(), h.data<double>());
  else
    for (std::size_t i = 0; i < values.size(); ++i) h.data<float>()[i] = static_cast<float>(values[i]);
  return h;
}

rt::Work HostStagedComm::copy_back(rt::Work inner, rt::Tensor host, rt::Tensor dst) {
  auto then = [this, host = std::move(host), dst]() mutable {
    std::vector<double> values(static_cast<std::size_t>(host.numel()));
    if (host.dtype() == rt::DType::f64)
      std::copy_n(host.data<double>(), values.size(), values.begin());
    else
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = host.data<float>()[i];
    rt::Tensor staged = dev_.from_host(values, dst.shape());
    dev_.copy(staged, dst);
  };
  return rt::Work(std::make_shared<ThenWork>(std::move(inner), std::move(then)));
}

rt::Work HostStagedComm::all_reduce(rt::Tensor& inout) {
  rt::Tensor h = to_host(inout);
  rt::Work w = inner_.all_reduce(h);
  return copy_back(std::move(w), h, inout);
}
rt::Work HostStagedComm::reduce_scatter(const rt::Tensor& in, rt::Tensor& out, int dim) {
  rt::Tensor h_out = host_like(out);
  rt::Work w = inner_.reduce_scatter(to_host(in), h_out, dim);
  return copy_back(std::move(w), h_out, out);
}
rt::Work HostStagedComm::all_gather(const rt::Tensor& in, rt::Tensor& out, int dim) {
  rt::Tensor h_out = host_like(out);
  rt::Work w = inner_.all_gather(to_host(in), h_out, dim);
  return copy_back(std::move(w), h_out, out);
}
rt::Work HostStagedComm::all_to_all(const rt::Tensor& in, rt::Tensor& out, int split_dim, int concat_dim) {
  rt::Tensor h_out = host_like(out);
  rt::Work w = inner_.all_to_all(to_host(in), h_out, split_dim, concat_dim);
  return copy_back(std::move(w), h_out, out);
}
rt::Work HostStagedComm::send(const rt::Tensor& t, int dst, int tag) {
  return inner_.send(to_host(t), dst, tag);
}
rt::Work HostStagedComm::recv(rt::Tensor& t, int src, int tag) {
  rt::Tensor h = host_like(t);
  rt::Work w = inner_.recv(h, src, tag);
  return copy_back(std::move(w), h, t);
}
rt::Work HostStagedComm::sendrecv(const rt::Tensor& out, int dst, rt::Tensor& in, int src, int tag) {
  rt::Tensor h_in = host_like(in);
  rt::Work w = inner_.sendrecv(to_host(out), dst, h_in, src, tag);
  return copy_back(std::move(w), h_in, in);
}
std::unique_ptr<rt::Comm> HostStagedComm::split(const std::vector<int>& color_of_rank) {
  return std::unique_ptr<rt::Comm>(new HostStagedComm(inner_.split(color_of_rank), dev_));
}

}  // namespace spsim::analysis
