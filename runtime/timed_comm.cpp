// TimedComm: per-kind blocked time of every communication call.
#include "runtime/timed_comm.hpp"

#include <utility>
#include <vector>

namespace spsim::rt {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Adds the time spent in wait() to the kind's blocked time.
class TimedWork final : public Work::Impl {
 public:
  TimedWork(Work inner, std::shared_ptr<CommStats> stats, CommKind kind)
      : inner_(std::move(inner)), stats_(std::move(stats)), kind_(kind) {}
  void wait() override {
    const auto t0 = Clock::now();
    inner_.wait();
    (*stats_)[static_cast<std::size_t>(kind_)].blocked_s += seconds_since(t0);
  }

 private:
  Work inner_;
  std::shared_ptr<CommStats> stats_;
  CommKind kind_;
};

}  // namespace

// ---- TimedComm ---------------------------------------------------------------------------------

TimedComm::TimedComm(Comm& inner, bool sync_collectives)
    : inner_(inner), stats_(std::make_shared<CommStats>()), sync_collectives_(sync_collectives) {}
TimedComm::TimedComm(std::unique_ptr<Comm> owned, std::shared_ptr<CommStats> stats, bool sync_collectives)
    : owned_(std::move(owned)),
      inner_(*owned_),
      stats_(std::move(stats)),
      sync_collectives_(sync_collectives) {}
TimedComm::~TimedComm() = default;

template <class Post>
Work TimedComm::timed(CommKind kind, double bytes, Post&& post) {
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
  Work inner = post();
  s.calls += 1;
  s.bytes += bytes;
  s.blocked_s += seconds_since(t0);
  if (!inner.pending()) return inner;
  return Work(std::make_shared<TimedWork>(std::move(inner), stats_, kind));
}

Work TimedComm::all_reduce(Tensor& inout) {
  return timed(CommKind::all_reduce, static_cast<double>(inout.nbytes()),
               [&] { return inner_.all_reduce(inout); });
}
Work TimedComm::reduce_scatter(const Tensor& in, Tensor& out, int dim) {
  return timed(CommKind::reduce_scatter, static_cast<double>(in.nbytes()),
               [&] { return inner_.reduce_scatter(in, out, dim); });
}
Work TimedComm::all_gather(const Tensor& in, Tensor& out, int dim) {
  return timed(CommKind::all_gather, static_cast<double>(out.nbytes()),
               [&] { return inner_.all_gather(in, out, dim); });
}
Work TimedComm::all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) {
  return timed(CommKind::all_to_all, static_cast<double>(in.nbytes()),
               [&] { return inner_.all_to_all(in, out, split_dim, concat_dim); });
}
Work TimedComm::send(const Tensor& t, int dst, int tag) {
  return timed(CommKind::send, static_cast<double>(t.nbytes()), [&] { return inner_.send(t, dst, tag); });
}
Work TimedComm::recv(Tensor& t, int src, int tag) {
  return timed(CommKind::recv, static_cast<double>(t.nbytes()), [&] { return inner_.recv(t, src, tag); });
}
Work TimedComm::sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag) {
  return timed(CommKind::sendrecv, static_cast<double>(out.nbytes()),
               [&] { return inner_.sendrecv(out, dst, in, src, tag); });
}
std::unique_ptr<Comm> TimedComm::split(const std::vector<int>& color_of_rank) {
  return std::unique_ptr<Comm>(new TimedComm(inner_.split(color_of_rank), stats_, sync_collectives_));
}

}  // namespace spsim::rt
