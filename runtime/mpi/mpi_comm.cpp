// MpiEnvironment and MpiComm: rt::Comm on non-blocking MPI calls, with packing of strided chunks.
#include "runtime/mpi/mpi_comm.hpp"

#include <climits>
#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <utility>

#include "runtime/host_storage.hpp"

namespace spsim::rt {

namespace {

[[nodiscard]] std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check_mpi(int code, std::string_view call) {
  if (code != MPI_SUCCESS) throw MpiError(std::string(call) + " failed: " + error_string(code));
}

[[nodiscard]] MPI_Datatype mpi_type(DType dtype, std::string_view op) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::bf16:
    case DType::f16:
      break;
  }
  throw RuntimeError("mpi " + std::string(op) + ": dtype " + std::string(dtype_name(dtype)) +
                     " is not supported (float32, float64)");
}

// MPI counts are int; larger messages would need derived datatypes, which no strategy needs yet.
[[nodiscard]] int mpi_count(std::int64_t n, std::string_view op) {
  if (n > INT_MAX)
    throw RuntimeError("mpi " + std::string(op) + ": " + std::to_string(n) +
                       " elements exceed MPI's int count");
  return static_cast<int>(n);
}

// The host pointer of a tensor, or a RuntimeError if it has none (undefined, or a data-less backend's).
[[nodiscard]] std::byte* host_bytes(const Tensor& t, std::string_view op) {
  if (!t.defined()) throw RuntimeError("mpi " + std::string(op) + ": undefined tensor");
  auto* p = static_cast<std::byte*>(t.storage()->data());
  if (p == nullptr && t.numel() > 0)
    throw RuntimeError("mpi " + std::string(op) + ": tensor holds no host data");
  return p;
}

[[nodiscard]] int normalize_dim(const Tensor& t, int dim, std::string_view op) {
  const int k = dim < 0 ? dim + t.ndim() : dim;
  if (k < 0 || k >= t.ndim())
    throw RuntimeError("mpi " + std::string(op) + ": dim " + std::to_string(dim) + " out of range for " +
                       to_string(t.shape()));
  return k;
}

void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.dtype() != b.dtype())
    throw RuntimeError("mpi " + std::string(op) + ": dtypes differ (" + std::string(dtype_name(a.dtype())) +
                       " vs " + std::string(dtype_name(b.dtype())) + ")");
}

void check_divisible(const Tensor& t, int dim, int parts, std::string_view op) {
  if (t.shape()[static_cast<std::size_t>(dim)] % parts != 0)
    throw RuntimeError("mpi " + std::string(op) + ": dim " + std::to_string(dim) + " of " +
                       to_string(t.shape()) + " is not divisible by the group size " + std::to_string(parts));
}

void check_shape(const Tensor& t, const Shape& want, std::string_view op) {
  if (t.shape() != want)
    throw RuntimeError("mpi " + std::string(op) + ": output shape " + to_string(t.shape()) + ", expected " +
                       to_string(want));
}

// A tensor cut into `parts` equal chunks along one dim, seen as bytes [outer][parts][block]: chunk j is
// the strided slab [outer][block] at j. With outer == 1 (dim 0, or all leading extents 1) chunks are
// contiguous and in rank order already, so no packing is needed; so is one chunk (parts == 1). This is
// rt::chunks_strided, the rule the simulator charges staging copies by.
struct ChunkLayout {
  std::size_t outer = 1;
  std::size_t parts = 1;
  std::size_t block_bytes = 0;
  [[nodiscard]] bool contiguous() const { return outer == 1 || parts == 1; }
};

[[nodiscard]] ChunkLayout chunk_layout(const Shape& shape, int dim, int parts, DType dtype) {
  ChunkLayout layout;
  layout.parts = static_cast<std::size_t>(parts);
  std::size_t inner = dtype_bytes(dtype);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const auto extent = static_cast<std::size_t>(shape[i]);
    if (i < static_cast<std::size_t>(dim)) layout.outer *= extent;
    if (i > static_cast<std::size_t>(dim)) inner *= extent;
  }
  layout.block_bytes = static_cast<std::size_t>(shape[static_cast<std::size_t>(dim)]) / layout.parts * inner;
  return layout;
}

// packed[j][o] = strided[o][j]: chunk j becomes contiguous at j * outer * block.
void pack(const std::byte* strided, std::byte* packed, const ChunkLayout& l) {
  for (std::size_t j = 0; j < l.parts; ++j)
    for (std::size_t o = 0; o < l.outer; ++o)
      std::memcpy(packed + (j * l.outer + o) * l.block_bytes, strided + (o * l.parts + j) * l.block_bytes,
                  l.block_bytes);
}

// strided[o][j] = packed[j][o]: the inverse of pack.
void unpack(const std::byte* packed, std::byte* strided, const ChunkLayout& l) {
  for (std::size_t o = 0; o < l.outer; ++o)
    for (std::size_t j = 0; j < l.parts; ++j)
      std::memcpy(strided + (o * l.parts + j) * l.block_bytes, packed + (j * l.outer + o) * l.block_bytes,
                  l.block_bytes);
}

// The MPI requests of one operation, the buffers they read and write, and what to do once they finish.
class MpiWork final : public Work::Impl {
 public:
  explicit MpiWork(std::string op) : op_(std::move(op)) {}
  MpiWork(const MpiWork&) = delete;
  MpiWork& operator=(const MpiWork&) = delete;

  ~MpiWork() override {
    if (requests_.empty()) return;
    if (std::uncaught_exceptions() > 0) {
      // Waiting could hang on a peer that will never post; MPI may still write into the buffers, so they
      // must outlive this object: leak them. The process is on its way to abort_all.
      static_cast<void>(new Buffers(std::move(buffers_)));
      return;
    }
    // Dropped without wait(): complete it here. A destructor cannot throw, so errors go unreported.
    std::vector<MPI_Status> statuses(requests_.size());
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), statuses.data());
  }

  // A slot for the request of an MPI call the caller posts at once (the pointer is valid until the next
  // add_request). A receive names the element count it must deliver, checked on completion.
  MPI_Request* add_request(int expected_recv_count = -1, MPI_Datatype type = MPI_DATATYPE_NULL) {
    requests_.push_back(MPI_REQUEST_NULL);
    expected_counts_.push_back(expected_recv_count);
    types_.push_back(type);
    return &requests_.back();
  }
  // A staging buffer shaped like `like` that lives as long as the operation: uninitialised (it is
  // overwritten whole) and from `like`'s buffer cache when it has one, so a repeated collective reuses
  // mapped memory instead of faulting in and zero-filling a fresh allocation every call.
  std::byte* staging(const Tensor& like) {
    buffers_.staging.push_back(make_host_tensor(like.shape(), like.dtype(), pool_of(like)));
    return static_cast<std::byte*>(buffers_.staging.back().storage()->data());
  }
  void keep_alive(const Tensor& t) { buffers_.tensors.push_back(t); }
  void on_complete(std::function<void()> finish) { finish_ = std::move(finish); }

  void wait() override {
    complete();
    if (finish_) finish_();
  }

 private:
  struct Buffers {
    std::vector<Tensor> tensors;
    std::vector<Tensor> staging;
  };

  void complete() {
    const auto n = requests_.size();
    std::vector<MPI_Status> statuses(n);
    const int code = MPI_Waitall(static_cast<int>(n), requests_.data(), statuses.data());
    // Whatever happened, these requests are finished with: never wait on them again (the destructor).
    requests_.clear();
    if (code == MPI_ERR_IN_STATUS) {
      for (const auto& status : statuses)
        if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING)
          check_mpi(status.MPI_ERROR, op_);
    }
    check_mpi(code, op_);
    for (std::size_t i = 0; i < n; ++i) {
      if (expected_counts_[i] < 0) continue;
      int count = 0;
      check_mpi(MPI_Get_count(&statuses[i], types_[i], &count), "MPI_Get_count");
      if (count != expected_counts_[i])
        throw MpiError(op_ + ": received " + std::to_string(count) + " elements, expected " +
                       std::to_string(expected_counts_[i]));
    }
  }

  std::string op_;
  std::vector<MPI_Request> requests_;
  std::vector<int> expected_counts_;  // per request: elements a receive must deliver, -1 = not a receive
  std::vector<MPI_Datatype> types_;
  Buffers buffers_;
  std::function<void()> finish_;
};

// The buffer to send a tensor's chunks from: the tensor itself when its chunks are contiguous and it
// does not alias the output (MPI forbids overlapping send and receive buffers), else a packed copy.
[[nodiscard]] const std::byte* send_buffer(MpiWork& work, const Tensor& in, const ChunkLayout& layout,
                                           bool aliased, std::string_view op) {
  const std::byte* src = host_bytes(in, op);
  if (layout.contiguous() && !aliased) return src;
  std::byte* packed = work.staging(in);
  pack(src, packed, layout);
  return packed;
}

// The buffer to receive chunks into: `out` itself when contiguous and not aliased, else a staging buffer
// unpacked into `out` once the requests complete.
[[nodiscard]] std::byte* recv_buffer(MpiWork& work, Tensor& out, const ChunkLayout& layout, bool aliased,
                                     std::string_view op) {
  std::byte* dst = host_bytes(out, op);
  if (layout.contiguous() && !aliased) return dst;
  std::byte* staged = work.staging(out);
  work.on_complete([staged, dst, layout] { unpack(staged, dst, layout); });
  return staged;
}

[[nodiscard]] bool aliased(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage();
}

}  // namespace

// ---- MpiEnvironment ------------------------------------------------------------------------------

MpiEnvironment::MpiEnvironment() {
  init(nullptr, nullptr);
}

MpiEnvironment::MpiEnvironment(int& argc, char**& argv) {
  init(&argc, &argv);
}

void MpiEnvironment::init(int* argc, char*** argv) {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (initialized != 0) {
    check_mpi(MPI_Query_thread(&thread_level_), "MPI_Query_thread");
  } else {
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &thread_level_), "MPI_Init_thread");
    owns_ = true;
  }
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && finalized == 0) MPI_Finalize();
}

int MpiEnvironment::world_rank() const {
  int rank = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  return rank;
}

int MpiEnvironment::world_size() const {
  int size = 0;
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  return size;
}

std::unique_ptr<MpiComm> MpiEnvironment::world() const {
  return MpiComm::duplicate_world();
}

// ---- MpiComm: setup ------------------------------------------------------------------------------

MpiComm::MpiComm(MPI_Comm comm) : comm_(comm) {
  if (comm_ == MPI_COMM_NULL) throw RuntimeError("MpiComm: MPI_COMM_NULL");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  void* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
  if (found != 0) tag_upper_bound_ = *static_cast<int*>(value);
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0 && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF) MPI_Comm_free(&comm_);
}

std::unique_ptr<MpiComm> MpiComm::duplicate_world() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (initialized == 0)
    throw RuntimeError("MpiComm::duplicate_world: MPI is not initialised (create an MpiEnvironment)");
  MPI_Comm dup = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  return std::make_unique<MpiComm>(dup);
}

void MpiComm::check_peer(int peer, int tag, std::string_view op) const {
  if (peer < 0 || peer >= size_)
    throw RuntimeError("mpi " + std::string(op) + ": peer rank " + std::to_string(peer) + " outside [0, " +
                       std::to_string(size_) + ")");
  if (tag < 0 || tag > tag_upper_bound_)
    throw RuntimeError("mpi " + std::string(op) + ": tag " + std::to_string(tag) + " outside [0, " +
                       std::to_string(tag_upper_bound_) + "]");
}

// ---- MpiComm: collectives ------------------------------------------------------------------------

Work MpiComm::all_reduce(Tensor& inout) {
  constexpr std::string_view op = "all_reduce";
  const MPI_Datatype type = mpi_type(inout.dtype(), op);
  const int count = mpi_count(inout.numel(), op);
  auto work = std::make_shared<MpiWork>("MPI_Iallreduce");
  work->keep_alive(inout);
  check_mpi(
      MPI_Iallreduce(MPI_IN_PLACE, host_bytes(inout, op), count, type, MPI_SUM, comm_, work->add_request()),
      "MPI_Iallreduce");
  return Work(work);
}

Work MpiComm::reduce_scatter(const Tensor& in, Tensor& out, int dim) {
  constexpr std::string_view op = "reduce_scatter";
  check_same_dtype(in, out, op);
  const MPI_Datatype type = mpi_type(in.dtype(), op);
  const int d = normalize_dim(in, dim, op);
  check_divisible(in, d, size_, op);
  Shape want = in.shape();
  want[static_cast<std::size_t>(d)] /= size_;
  check_shape(out, want, op);
  const int count = mpi_count(out.numel(), op);

  auto work = std::make_shared<MpiWork>("MPI_Ireduce_scatter_block");
  work->keep_alive(in);
  work->keep_alive(out);
  // The packed send buffer holds chunk j at j * count, exactly what MPI_Reduce_scatter_block expects;
  // `out` is one chunk, contiguous, so it is received into directly.
  const std::byte* send =
      send_buffer(*work, in, chunk_layout(in.shape(), d, size_, in.dtype()), aliased(in, out), op);
  check_mpi(
      MPI_Ireduce_scatter_block(send, host_bytes(out, op), count, type, MPI_SUM, comm_, work->add_request()),
      "MPI_Ireduce_scatter_block");
  return Work(work);
}

Work MpiComm::all_gather(const Tensor& in, Tensor& out, int dim) {
  constexpr std::string_view op = "all_gather";
  check_same_dtype(in, out, op);
  const MPI_Datatype type = mpi_type(in.dtype(), op);
  const int d = normalize_dim(in, dim, op);
  Shape want = in.shape();
  want[static_cast<std::size_t>(d)] *= size_;
  check_shape(out, want, op);
  const int count = mpi_count(in.numel(), op);

  auto work = std::make_shared<MpiWork>("MPI_Iallgather");
  work->keep_alive(in);
  work->keep_alive(out);
  const std::byte* send = host_bytes(in, op);
  std::byte* recv =
      recv_buffer(*work, out, chunk_layout(out.shape(), d, size_, out.dtype()), aliased(in, out), op);
  check_mpi(MPI_Iallgather(send, count, type, recv, count, type, comm_, work->add_request()),
            "MPI_Iallgather");
  return Work(work);
}

Work MpiComm::all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) {
  constexpr std::string_view op = "all_to_all";
  check_same_dtype(in, out, op);
  const MPI_Datatype type = mpi_type(in.dtype(), op);
  const int s = normalize_dim(in, split_dim, op);
  const int c = normalize_dim(in, concat_dim, op);
  check_divisible(in, s, size_, op);
  Shape want = in.shape();
  want[static_cast<std::size_t>(s)] /= size_;
  want[static_cast<std::size_t>(c)] *= size_;
  check_shape(out, want, op);
  const int chunk_count = mpi_count(in.numel() / size_, op);

  auto work = std::make_shared<MpiWork>("MPI_Ialltoall");
  work->keep_alive(in);
  work->keep_alive(out);
  const bool alias = aliased(in, out);
  // Send: chunk j along split_dim, packed in rank order. Receive: the chunk from rank j is a tensor of
  // in.shape with [split_dim] / P, which is `out` cut into P chunks along concat_dim.
  const std::byte* send = send_buffer(*work, in, chunk_layout(in.shape(), s, size_, in.dtype()), alias, op);
  std::byte* recv = recv_buffer(*work, out, chunk_layout(out.shape(), c, size_, out.dtype()), alias, op);
  check_mpi(MPI_Ialltoall(send, chunk_count, type, recv, chunk_count, type, comm_, work->add_request()),
            "MPI_Ialltoall");
  return Work(work);
}

// ---- MpiComm: point to point ---------------------------------------------------------------------

Work MpiComm::send(const Tensor& t, int dst, int tag) {
  constexpr std::string_view op = "send";
  check_peer(dst, tag, op);
  const MPI_Datatype type = mpi_type(t.dtype(), op);
  auto work = std::make_shared<MpiWork>("MPI_Isend");
  work->keep_alive(t);
  check_mpi(
      MPI_Isend(host_bytes(t, op), mpi_count(t.numel(), op), type, dst, tag, comm_, work->add_request()),
      "MPI_Isend");
  return Work(work);
}

Work MpiComm::recv(Tensor& t, int src, int tag) {
  constexpr std::string_view op = "recv";
  check_peer(src, tag, op);
  const MPI_Datatype type = mpi_type(t.dtype(), op);
  const int count = mpi_count(t.numel(), op);
  auto work = std::make_shared<MpiWork>("MPI_Irecv");
  work->keep_alive(t);
  check_mpi(MPI_Irecv(host_bytes(t, op), count, type, src, tag, comm_, work->add_request(count, type)),
            "MPI_Irecv");
  return Work(work);
}

Work MpiComm::sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag) {
  constexpr std::string_view op = "sendrecv";
  check_peer(dst, tag, op);
  check_peer(src, tag, op);
  const MPI_Datatype send_type = mpi_type(out.dtype(), op);
  const MPI_Datatype recv_type = mpi_type(in.dtype(), op);
  const int recv_count = mpi_count(in.numel(), op);
  auto work = std::make_shared<MpiWork>("MPI_Isend/MPI_Irecv");
  work->keep_alive(out);
  work->keep_alive(in);
  // Receive first, so an eager message from `src` lands in the user's buffer without an extra copy.
  check_mpi(MPI_Irecv(host_bytes(in, op), recv_count, recv_type, src, tag, comm_,
                      work->add_request(recv_count, recv_type)),
            "MPI_Irecv");
  check_mpi(MPI_Isend(host_bytes(out, op), mpi_count(out.numel(), op), send_type, dst, tag, comm_,
                      work->add_request()),
            "MPI_Isend");
  return Work(work);
}

void MpiComm::barrier() {
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

std::unique_ptr<Comm> MpiComm::split(const std::vector<int>& color_of_rank) {
  if (color_of_rank.size() != static_cast<std::size_t>(size_))
    throw RuntimeError("mpi split: " + std::to_string(color_of_rank.size()) + " colors for a group of " +
                       std::to_string(size_));
  for (std::size_t r = 0; r < color_of_rank.size(); ++r)
    if (color_of_rank[r] < 0)
      throw RuntimeError("mpi split: color " + std::to_string(color_of_rank[r]) + " of rank " +
                         std::to_string(r) + " is negative");
  const int color = color_of_rank[static_cast<std::size_t>(rank_)];
  MPI_Comm sub = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, color, rank_, &sub), "MPI_Comm_split");
  auto result = std::make_unique<MpiComm>(sub);
  // The group the vector describes: ranks of my color, in rank order.
  int want_rank = 0;
  int want_size = 0;
  for (int r = 0; r < size_; ++r) {
    if (color_of_rank[static_cast<std::size_t>(r)] != color) continue;
    if (r < rank_) ++want_rank;
    ++want_size;
  }
  if (result->rank() != want_rank || result->size() != want_size)
    throw RuntimeError("mpi split: MPI formed a group of " + std::to_string(result->size()) +
                       " with this rank at " + std::to_string(result->rank()) + ", the color vector says " +
                       std::to_string(want_size) + " and " + std::to_string(want_rank) +
                       " (is the vector the same on every rank?)");
  return result;
}

}  // namespace spsim::rt
