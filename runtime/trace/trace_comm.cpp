// TraceComm: validated, data-less collectives and point-to-point calls recorded as CommOps.
#include "runtime/trace/trace_comm.hpp"

#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/trace/trace_device.hpp"

namespace spsim::rt::trace {

namespace {

// Work of a recorded CommOp: wait() records the dependency on it, then releases the op's staging
// buffers (their Free follows the Wait, as a backend frees them once the op has completed).
class TraceWork final : public Work::Impl {
 public:
  TraceWork(Recorder recorder, std::size_t comm_record, std::vector<std::shared_ptr<Storage>> staging)
      : recorder_(std::move(recorder)), comm_record_(comm_record), staging_(std::move(staging)) {}
  void wait() override {
    recorder_.add(Wait{comm_record_});
    staging_.clear();
  }

 private:
  Recorder recorder_;
  std::size_t comm_record_;
  std::vector<std::shared_ptr<Storage>> staging_;
};

[[noreturn]] void fail(std::string_view op, const std::string& msg) {
  throw RuntimeError("comm " + std::string(op) + ": " + msg);
}

void check_defined(std::string_view op, const Tensor& t, const char* what) {
  if (!t.defined()) fail(op, std::string(what) + " is undefined");
}

void same_dtype(std::string_view op, const Tensor& in, const Tensor& out) {
  if (in.dtype() != out.dtype())
    fail(op,
         "in is " + std::string(dtype_name(in.dtype())) + ", out is " + std::string(dtype_name(out.dtype())));
}

[[nodiscard]] std::size_t norm_dim(std::string_view op, int dim, const Tensor& t) {
  const int k = dim < 0 ? dim + t.ndim() : dim;
  if (k < 0 || k >= t.ndim())
    fail(op, "dim " + std::to_string(dim) + " out of range for " + to_string(t.shape()));
  return static_cast<std::size_t>(k);
}

void expect_out(std::string_view op, const Tensor& out, const Shape& want) {
  if (out.shape() != want) fail(op, "out is " + to_string(out.shape()) + ", expected " + to_string(want));
}

void check_divisible(std::string_view op, const Tensor& in, std::size_t d, int p) {
  if (in.shape()[d] % p != 0)
    fail(op, "dim " + std::to_string(d) + " of " + to_string(in.shape()) +
                 " is not divisible by the group size " + std::to_string(p));
}

// The world group 0..size-1, which every rank of a trace holds: one list and one id per world size, not
// a list per rank and its hash (four multiplies a member), which at thousands of ranks were most of
// recording each rank's first records.
Group world_group(int size) {
  static std::mutex mu;
  static std::unordered_map<int, Group> worlds;
  const std::lock_guard lock(mu);
  const auto it = worlds.find(size);
  if (it != worlds.end()) return it->second;
  std::vector<int> members(static_cast<std::size_t>(size));
  std::iota(members.begin(), members.end(), 0);
  const GroupId id = group_id(members);
  return worlds.emplace(size, Group{id, std::move(members)}).first->second;
}

}  // namespace

TraceComm::TraceComm(int rank, int size, Recorder recorder)
    : my_index_(rank), recorder_(std::move(recorder)) {
  if (size < 1 || rank < 0 || rank >= size)
    throw RuntimeError("trace comm: rank " + std::to_string(rank) + " of a world of size " +
                       std::to_string(size));
  group_ = world_group(size);
  recorder_.add_group(group_);
}

TraceComm::TraceComm(Group group, int my_index, Recorder recorder)
    : group_(std::move(group)), my_index_(my_index), recorder_(std::move(recorder)) {
  recorder_.add_group(group_);
}

Work TraceComm::post(CommOp op) {
  // The staging buffers of strided chunks (pack and unpack), allocated before the op is recorded.
  std::vector<std::shared_ptr<Storage>> staging;
  for (std::uint64_t bytes : {op.pack_bytes(), op.unpack_bytes()})
    if (bytes > 0) staging.push_back(make_trace_storage(bytes, recorder_));
  if (launch_depth_ > 0) {
    op.joins_launch = launch_has_op_;
    launch_has_op_ = true;
  }
  const std::size_t index = recorder_.add(std::move(op));
  return Work(std::make_shared<TraceWork>(recorder_, index, std::move(staging)));
}

CommOp TraceComm::collective(CommKind kind, std::uint64_t bytes) {
  CommOp op;
  op.kind = kind;
  op.group = group_.id;
  op.bytes = bytes;
  op.seq = recorder_.next_collective_seq(group_.id);
  return op;
}

void TraceComm::check_peer(const char* op, int peer) const {
  if (peer < 0 || peer >= size())
    fail(op, "peer " + std::to_string(peer) + " is not a rank of a group of size " + std::to_string(size()));
}

Work TraceComm::all_reduce(Tensor& inout) {
  check_defined("all_reduce", inout, "inout");
  return post(collective(CommKind::all_reduce, inout.nbytes()));
}

Work TraceComm::all_reduce_coalesced(std::vector<Tensor>& inout) {
  std::uint64_t bytes = 0;
  for (const auto& t : inout) {
    check_defined("all_reduce_coalesced", t, "a tensor");
    bytes += t.nbytes();
  }
  return post(collective(CommKind::all_reduce, bytes));
}

Work TraceComm::reduce_scatter(const Tensor& in, Tensor& out, int dim) {
  constexpr const char* op = "reduce_scatter";
  check_defined(op, in, "in");
  check_defined(op, out, "out");
  same_dtype(op, in, out);
  const std::size_t d = norm_dim(op, dim, in);
  check_divisible(op, in, d, size());
  Shape want = in.shape();
  want[d] /= size();
  expect_out(op, out, want);
  CommOp c = collective(CommKind::reduce_scatter, in.nbytes());
  c.packs = chunks_strided(in.shape(), static_cast<int>(d), size());
  return post(std::move(c));
}

Work TraceComm::all_gather(const Tensor& in, Tensor& out, int dim) {
  constexpr const char* op = "all_gather";
  check_defined(op, in, "in");
  check_defined(op, out, "out");
  same_dtype(op, in, out);
  const std::size_t d = norm_dim(op, dim, in);
  Shape want = in.shape();
  want[d] *= size();
  expect_out(op, out, want);
  CommOp c = collective(CommKind::all_gather, out.nbytes());
  c.unpacks = chunks_strided(out.shape(), static_cast<int>(d), size());
  return post(std::move(c));
}

Work TraceComm::all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) {
  constexpr const char* op = "all_to_all";
  check_defined(op, in, "in");
  check_defined(op, out, "out");
  same_dtype(op, in, out);
  const std::size_t s = norm_dim(op, split_dim, in), c = norm_dim(op, concat_dim, in);
  check_divisible(op, in, s, size());
  Shape want = in.shape();
  want[s] /= size();
  want[c] *= size();
  expect_out(op, out, want);
  CommOp a = collective(CommKind::all_to_all, in.nbytes());
  a.packs = chunks_strided(in.shape(), static_cast<int>(s), size());
  a.unpacks = chunks_strided(out.shape(), static_cast<int>(c), size());  // out.nbytes() == in.nbytes()
  return post(std::move(a));
}

Work TraceComm::send(const Tensor& t, int dst, int tag) {
  check_defined("send", t, "t");
  check_peer("send", dst);
  CommOp op;
  op.kind = CommKind::send;
  op.group = group_.id;
  op.bytes = t.nbytes();
  op.dst = group_.members[static_cast<std::size_t>(dst)];
  op.tag = tag;
  op.seq = recorder_.next_p2p_seq(group_.id, recorder_.rank(), op.dst, tag);
  return post(std::move(op));
}

Work TraceComm::recv(Tensor& t, int src, int tag) {
  check_defined("recv", t, "t");
  check_peer("recv", src);
  CommOp op;
  op.kind = CommKind::recv;
  op.group = group_.id;
  op.recv_bytes = t.nbytes();
  op.src = group_.members[static_cast<std::size_t>(src)];
  op.tag = tag;
  op.recv_seq = recorder_.next_p2p_seq(group_.id, op.src, recorder_.rank(), tag);
  return post(std::move(op));
}

Work TraceComm::sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag) {
  check_defined("sendrecv", out, "out");
  check_defined("sendrecv", in, "in");
  check_peer("sendrecv", dst);
  check_peer("sendrecv", src);
  CommOp op;
  op.kind = CommKind::sendrecv;
  op.group = group_.id;
  op.bytes = out.nbytes();
  op.recv_bytes = in.nbytes();
  op.dst = group_.members[static_cast<std::size_t>(dst)];
  op.src = group_.members[static_cast<std::size_t>(src)];
  op.tag = tag;
  op.seq = recorder_.next_p2p_seq(group_.id, recorder_.rank(), op.dst, tag);
  op.recv_seq = recorder_.next_p2p_seq(group_.id, op.src, recorder_.rank(), tag);
  return post(std::move(op));
}

void TraceComm::barrier() {
  post(collective(CommKind::barrier, 0)).wait();
}

std::unique_ptr<Comm> TraceComm::split(const std::vector<int>& color_of_rank) {
  if (color_of_rank.size() != group_.members.size())
    fail("split",
         std::to_string(color_of_rank.size()) + " colors for a group of size " + std::to_string(size()));
  const int mine = color_of_rank[static_cast<std::size_t>(my_index_)];
  std::vector<int> members;
  int my_index = 0;
  for (std::size_t i = 0; i < color_of_rank.size(); ++i) {
    if (color_of_rank[i] != mine) continue;
    if (static_cast<int>(i) == my_index_) my_index = static_cast<int>(members.size());
    members.push_back(group_.members[i]);
  }
  const GroupId id = group_id(members);
  return std::unique_ptr<Comm>(new TraceComm(Group{id, std::move(members)}, my_index, recorder_));
}

}  // namespace spsim::rt::trace
