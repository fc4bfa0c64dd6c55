// ThreadsComm (the Comm of one rank of a ThreadsWorld) and ThreadsWorld.
#include "runtime/threads/threads_comm.hpp"

#include <cstring>
#include <numeric>
#include <span>
#include <string>

#include "runtime/host_storage.hpp"
#include "runtime/threads/chunks.hpp"
#include "runtime/threads/collectives.hpp"
#include "runtime/threads/group.hpp"

namespace spsim::rt {

namespace threads_detail {
namespace {

// The host bytes of `t`, which must be a defined f32/f64 tensor with host data.
std::span<std::byte> host_bytes(const Tensor& t, std::string_view op) {
  const std::string where = "threads comm: " + std::string(op) + ": ";
  if (!t.defined()) throw RuntimeError(where + "undefined tensor");
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    throw RuntimeError(where + "supports float32 and float64 tensors, got " +
                       std::string(dtype_name(t.dtype())));
  void* data = t.storage()->data();
  if (data == nullptr) throw RuntimeError(where + "tensor " + to_string(t.shape()) + " holds no host data");
  if (t.storage()->bytes() < t.nbytes())
    throw RuntimeError(where + "tensor " + to_string(t.shape()) + " is larger than its storage");
  return {static_cast<std::byte*>(data), t.nbytes()};
}

void check_shape(const Tensor& t, const Shape& want, std::string_view op, std::string_view what) {
  if (t.shape() != want)
    throw RuntimeError("threads comm: " + std::string(op) + ": " + std::string(what) + " has shape " +
                       to_string(t.shape()) + ", expected " + to_string(want));
}

void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.dtype() != b.dtype())
    throw RuntimeError("threads comm: " + std::string(op) + ": input is " +
                       std::string(dtype_name(a.dtype())) + " but output is " +
                       std::string(dtype_name(b.dtype())));
}

// in.shape with dimension d multiplied by num / den.
Shape rescaled(const Shape& shape, int d, std::int64_t num, std::int64_t den) {
  Shape s = shape;
  s[static_cast<std::size_t>(d)] = s[static_cast<std::size_t>(d)] * num / den;
  return s;
}

class RecvWork final : public Work::Impl {
 public:
  RecvWork(std::shared_ptr<Group> group, Mailbox& box, std::shared_ptr<PendingRecv> recv)
      : group_(std::move(group)), box_(box), recv_(std::move(recv)) {}
  void wait() override { box_.wait(*recv_); }

 private:
  std::shared_ptr<Group> group_;  // keeps box_ alive
  Mailbox& box_;
  std::shared_ptr<PendingRecv> recv_;
};

class ThreadsComm final : public Comm {
 public:
  ThreadsComm(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return group_->size(); }
  [[nodiscard]] std::string_view backend() const override { return "threads"; }

  [[nodiscard]] Work all_reduce(Tensor& inout) override;
  [[nodiscard]] Work reduce_scatter(const Tensor& in, Tensor& out, int dim) override;
  [[nodiscard]] Work all_gather(const Tensor& in, Tensor& out, int dim) override;
  [[nodiscard]] Work all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) override;
  [[nodiscard]] Work send(const Tensor& t, int dst, int tag) override;
  [[nodiscard]] Work recv(Tensor& t, int src, int tag) override;
  [[nodiscard]] Work sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag) override;
  void barrier() override;
  [[nodiscard]] std::unique_ptr<Comm> split(const std::vector<int>& color_of_rank) override;

 private:
  [[nodiscard]] Exchange begin(CommKind kind, DType dtype);
  void check_peer(int peer, std::string_view op) const;

  std::shared_ptr<Group> group_;
  int rank_;
  std::uint64_t collectives_ = 0;  // collectives posted so far: every rank counts the same (SPMD)
  std::uint64_t splits_ = 0;
};

Exchange ThreadsComm::begin(CommKind kind, DType dtype) {
  if (group_->world().aborted()) throw aborted_error(group_->world());
  return Exchange(*group_, rank_, collectives_++, kind, dtype);
}

void ThreadsComm::check_peer(int peer, std::string_view op) const {
  if (peer < 0 || peer >= size())
    throw RuntimeError("threads comm: " + std::string(op) + ": peer rank " + std::to_string(peer) +
                       " is outside the group of " + std::to_string(size()) + " ranks");
}

Work ThreadsComm::all_reduce(Tensor& inout) {
  const auto bytes = host_bytes(inout, "all_reduce");
  Exchange ex = begin(CommKind::all_reduce, inout.dtype());
  const auto chunks = near_equal_chunks(bytes, inout.numel(), size(), dtype_bytes(inout.dtype()));
  ring_reduce_scatter(ex, chunks);
  ring_all_gather(ex, chunks);
  return Work::done();
}

Work ThreadsComm::reduce_scatter(const Tensor& in, Tensor& out, int dim) {
  constexpr std::string_view op = "reduce_scatter";
  const auto src = host_bytes(in, op);
  const auto dst = host_bytes(out, op);
  check_same_dtype(in, out, op);
  const ChunkGeometry g = chunk_geometry(in.shape(), dim, size(), dtype_bytes(in.dtype()), op);
  check_shape(out, rescaled(in.shape(), normalize_dim(in.shape(), dim, op), 1, size()), op, "output");
  // Chunk-major copy of `in`, reduced in place. Taken from `in`'s buffer cache when it has one: a
  // fresh zero-filled buffer of a full-length gradient costs more in page faults than the reduction.
  Tensor packed_t = make_host_tensor({in.numel()}, in.dtype(), pool_of(in));
  const std::span<std::byte> packed(static_cast<std::byte*>(packed_t.storage()->data()), src.size());
  const auto chunks = equal_chunks(packed, size());
  for (int j = 0; j < size(); ++j) pack_chunk(src, g, j, chunks[static_cast<std::size_t>(j)]);
  Exchange ex = begin(CommKind::reduce_scatter, in.dtype());
  ring_reduce_scatter(ex, chunks);
  const auto mine = chunks[static_cast<std::size_t>(rank_)];
  if (!mine.empty()) std::memcpy(dst.data(), mine.data(), mine.size());
  return Work::done();
}

Work ThreadsComm::all_gather(const Tensor& in, Tensor& out, int dim) {
  constexpr std::string_view op = "all_gather";
  const auto src = host_bytes(in, op);
  const auto dst = host_bytes(out, op);
  check_same_dtype(in, out, op);
  check_shape(out, rescaled(in.shape(), normalize_dim(in.shape(), dim, op), size(), 1), op, "output");
  const ChunkGeometry g = chunk_geometry(out.shape(), dim, size(), dtype_bytes(in.dtype()), op);
  // Along dim 0 (outer == 1) the chunks are contiguous in `out` and are gathered there directly.
  std::vector<std::byte> packed(g.outer == 1 ? 0 : dst.size());
  const auto chunks = equal_chunks(g.outer == 1 ? dst : std::span<std::byte>(packed), size());
  if (!src.empty()) std::memmove(chunks[static_cast<std::size_t>(rank_)].data(), src.data(), src.size());
  Exchange ex = begin(CommKind::all_gather, in.dtype());
  ring_all_gather(ex, chunks);
  if (g.outer != 1)
    for (int j = 0; j < size(); ++j) unpack_chunk(chunks[static_cast<std::size_t>(j)], g, j, dst);
  return Work::done();
}

Work ThreadsComm::all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) {
  constexpr std::string_view op = "all_to_all";
  auto src = host_bytes(in, op);
  const auto dst = host_bytes(out, op);
  check_same_dtype(in, out, op);
  const ChunkGeometry gs = chunk_geometry(in.shape(), split_dim, size(), dtype_bytes(in.dtype()), op);
  const int sd = normalize_dim(in.shape(), split_dim, op);
  const int cd = normalize_dim(in.shape(), concat_dim, op);
  check_shape(out, rescaled(rescaled(in.shape(), sd, 1, size()), cd, size(), 1), op, "output");
  const ChunkGeometry gc = chunk_geometry(out.shape(), concat_dim, size(), dtype_bytes(in.dtype()), op);
  // Received chunks are written into `out` while later chunks of `in` are still to be sent.
  std::vector<std::byte> in_copy;
  if (in.storage() == out.storage()) {
    in_copy.assign(src.begin(), src.end());
    src = in_copy;
  }
  Exchange ex = begin(CommKind::all_to_all, in.dtype());
  pairwise_all_to_all(
      ex, gs.chunk_bytes(),
      [&](int j) {
        std::vector<std::byte> chunk(gs.chunk_bytes());
        pack_chunk(src, gs, j, chunk);
        return chunk;
      },
      [&](int j, std::span<const std::byte> chunk) { unpack_chunk(chunk, gc, j, dst); });
  return Work::done();
}

Work ThreadsComm::send(const Tensor& t, int dst, int tag) {
  check_peer(dst, "send");
  const auto bytes = host_bytes(t, "send");
  Message message{0, t.dtype(), std::vector<std::byte>(bytes.begin(), bytes.end())};
  group_->mailbox(rank_, dst, Channel::user, tag).deliver(std::move(message));
  return Work::done();
}

Work ThreadsComm::recv(Tensor& t, int src, int tag) {
  check_peer(src, "recv");
  (void)host_bytes(t, "recv");
  Mailbox& box = group_->mailbox(src, rank_, Channel::user, tag);
  auto pending = box.post(t);
  if (!pending) return Work::done();
  return Work(std::make_shared<RecvWork>(group_, box, std::move(pending)));
}

Work ThreadsComm::sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag) {
  (void)send(out, dst, tag);  // buffered: complete on return, so sending first cannot deadlock
  return recv(in, src, tag);
}

void ThreadsComm::barrier() {
  Exchange ex = begin(CommKind::barrier, DType::f32);
  dissemination_barrier(ex);
}

std::unique_ptr<Comm> ThreadsComm::split(const std::vector<int>& color_of_rank) {
  auto [child, sub_rank] = group_->split(splits_++, color_of_rank, rank_);
  return std::make_unique<ThreadsComm>(std::move(child), sub_rank);
}

}  // namespace
}  // namespace threads_detail

ThreadsWorld::ThreadsWorld(int size) {
  if (size < 1)
    throw RuntimeError("threads comm: world size must be at least 1, got " + std::to_string(size));
  world_ = std::make_shared<threads_detail::World>(size);
  std::vector<int> ranks(static_cast<std::size_t>(size));
  std::iota(ranks.begin(), ranks.end(), 0);
  root_ = threads_detail::Group::create(world_, std::move(ranks));
}

int ThreadsWorld::size() const {
  return world_->size();
}

std::unique_ptr<Comm> ThreadsWorld::comm(int rank) const {
  if (rank < 0 || rank >= size())
    throw RuntimeError("threads comm: rank " + std::to_string(rank) + " is outside the world of " +
                       std::to_string(size()) + " ranks");
  return std::make_unique<threads_detail::ThreadsComm>(root_, rank);
}

void ThreadsWorld::abort(const std::string& reason) const {
  world_->abort(reason);
}

bool ThreadsWorld::aborted() const {
  return world_->aborted();
}

void ThreadsWorld::finished(int rank) const {
  if (auto deadlock = world_->finish(rank)) world_->abort(*deadlock);
}

}  // namespace spsim::rt
