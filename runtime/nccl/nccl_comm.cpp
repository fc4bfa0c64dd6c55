// NcclComm: collectives and p2p on NCCL, ordered against the compute stream with CUDA events.
#include "runtime/nccl/nccl_comm.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <string>
#ifdef SPSIM_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: OpenMPI's C++ bindings need their own library
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include "runtime/cuda/detail/check.hpp"
#include "runtime/cuda/detail/kernels.hpp"

namespace spsim::rt {

namespace {

using cuda_detail::Index;

void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess)
    throw RuntimeError(std::string("NCCL error ") + ncclGetErrorString(r) + " in " + call + " at " + file +
                       ":" + std::to_string(line));
}
#define SPSIM_NCCL_CHECK(call) check_nccl((call), #call, __FILE__, __LINE__)

ncclDataType_t nccl_type(DType dt) {
  switch (dt) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f16:
      return ncclFloat16;
  }
  return ncclFloat32;
}

// An event without timing (cheaper), destroyed with its owner.
struct Event {
  cudaEvent_t e = nullptr;
  Event() { SPSIM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

// Completion of one queued NCCL operation, as seen by the compute stream.
class NcclWork final : public Work::Impl {
 public:
  NcclWork(cudaStream_t compute, std::unique_ptr<Event> done, std::vector<Tensor> keep)
      : compute_(compute), done_(std::move(done)), keep_(std::move(keep)) {}
  ~NcclWork() override {
    if (!waited_) cudaStreamWaitEvent(compute_, done_->e, 0);  // see nccl_comm.hpp: keeps buffers safe
  }
  NcclWork(const NcclWork&) = delete;
  NcclWork& operator=(const NcclWork&) = delete;
  void wait() override {
    if (waited_) return;
    SPSIM_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_->e, 0));
    waited_ = true;
  }

 private:
  cudaStream_t compute_;
  std::unique_ptr<Event> done_;
  std::vector<Tensor> keep_;  // buffers (and pack scratch) the operation reads or writes
  bool waited_ = false;
};

int normalize_dim(const Tensor& t, int dim, const char* what) {
  const int d = dim < 0 ? dim + t.ndim() : dim;
  if (d < 0 || d >= t.ndim())
    throw RuntimeError(std::string(what) + ": dim " + std::to_string(dim) + " out of range for " +
                       to_string(t.shape()));
  return d;
}

// Product of shape[0..dim) and of shape(dim..end).
Index outer_of(const Shape& s, int dim) {
  Index n = 1;
  for (int i = 0; i < dim; ++i) n *= s[static_cast<std::size_t>(i)];
  return n;
}

Shape with_dim(Shape s, int dim, Index value) {
  s[static_cast<std::size_t>(dim)] = value;
  return s;
}

}  // namespace

struct NcclComm::State {
  CudaDevice* device = nullptr;
  ncclComm_t comm = nullptr;
  cudaStream_t compute = nullptr;
  cudaStream_t stream = nullptr;  // communication stream
  int rank = 0, size = 1;

  explicit State(CudaDevice& dev) : device(&dev), compute(static_cast<cudaStream_t>(dev.stream_handle())) {
    SPSIM_CUDA_CHECK(cudaSetDevice(dev.device_index()));
    int least = 0, greatest = 0;  // a high-priority stream lets transfers start ahead of queued compute
    SPSIM_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    SPSIM_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  }
  ~State() {
    cudaSetDevice(device->device_index());
    if (stream) cudaStreamSynchronize(stream);
    if (comm) ncclCommDestroy(comm);
    if (stream) cudaStreamDestroy(stream);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // The tensor's device pointer after checking it belongs to this communicator's device.
  [[nodiscard]] void* ptr(const Tensor& t, const char* what) const {
    if (!t.defined() || !is_cuda_tensor(t))
      throw RuntimeError(std::string("nccl ") + what + ": needs a CUDA tensor");
    if (t.dtype() != device->dtype())
      throw RuntimeError(std::string("nccl ") + what + ": dtype " + std::string(dtype_name(t.dtype())) +
                         " on a " + std::string(dtype_name(device->dtype())) + " device");
    return t.storage()->data();
  }
  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= size)
      throw RuntimeError(std::string("nccl ") + what + ": peer " + std::to_string(peer) + " not in [0, " +
                         std::to_string(size) + ")");
  }

  // Queues `body` on the communication stream after the compute stream's queued work.
  template <class F>
  Work enqueue(std::vector<Tensor> keep, F&& body) {
    SPSIM_CUDA_CHECK(cudaSetDevice(device->device_index()));
    Event ready;
    SPSIM_CUDA_CHECK(cudaEventRecord(ready.e, compute));
    SPSIM_CUDA_CHECK(cudaStreamWaitEvent(stream, ready.e, 0));
    body();
    auto done = std::make_unique<Event>();
    SPSIM_CUDA_CHECK(cudaEventRecord(done->e, stream));
    return Work(std::make_shared<NcclWork>(compute, std::move(done), std::move(keep)));
  }

  // dst[j, o, r] = src[o, j, r] for src [outer, P, rest] (pack chunks contiguous), or the inverse.
  void swap_outer(const void* src, void* dst, Index a, Index b, Index rest) const {
    const Index dims[4] = {1, a, b, rest};
    const int perm[4] = {0, 2, 1, 3};
    cuda_detail::permute(dtype_bytes(device->dtype()), src, dst, dims, perm, stream);
  }
};

// ---- construction ---------------------------------------------------------------------------------

int local_cuda_device_index() {
  const int count = cuda_device_count();
  if (count == 0) throw RuntimeError("no CUDA device is visible to this process");
  int local = 0;
#ifdef SPSIM_WITH_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return local % count;
  }
#endif
  if (const char* env = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local = std::atoi(env);
  return local % count;
}

NcclComm::NcclComm(std::unique_ptr<State> state) : s_(std::move(state)) {}

NcclComm::NcclComm(CudaDevice& device) : s_(std::make_unique<State>(device)) {
  ncclUniqueId id;
  SPSIM_NCCL_CHECK(ncclGetUniqueId(&id));
  SPSIM_NCCL_CHECK(ncclCommInitRank(&s_->comm, 1, id, 0));
}

std::unique_ptr<NcclComm> NcclComm::create_world(CudaDevice& device) {
#ifdef SPSIM_WITH_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) throw RuntimeError("NcclComm::create_world: MPI is not initialised");
  auto s = std::make_unique<State>(device);
  MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s->size);
  ncclUniqueId id;
  if (s->rank == 0) SPSIM_NCCL_CHECK(ncclGetUniqueId(&id));
  if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw RuntimeError("NcclComm::create_world: MPI_Bcast of the NCCL unique id failed");
  SPSIM_NCCL_CHECK(ncclCommInitRank(&s->comm, s->size, id, s->rank));
  return std::unique_ptr<NcclComm>(new NcclComm(std::move(s)));
#else
  (void)device;
  throw RuntimeError("NcclComm::create_world: spsim was built without MPI (SPSIM_WITH_MPI)");
#endif
}

NcclComm::~NcclComm() = default;

int NcclComm::rank() const {
  return s_->rank;
}
int NcclComm::size() const {
  return s_->size;
}

// ---- collectives ----------------------------------------------------------------------------------

Work NcclComm::all_reduce(Tensor& inout) {
  void* p = s_->ptr(inout, "all_reduce");
  const auto count = static_cast<std::size_t>(inout.numel());
  const auto type = nccl_type(inout.dtype());
  return s_->enqueue(
      {inout}, [&] { SPSIM_NCCL_CHECK(ncclAllReduce(p, p, count, type, ncclSum, s_->comm, s_->stream)); });
}

Work NcclComm::reduce_scatter(const Tensor& in, Tensor& out, int dim) {
  const int d = normalize_dim(in, dim, "reduce_scatter");
  const Index p = s_->size, extent = in.dim(d);
  if (extent % p || out.shape() != with_dim(in.shape(), d, extent / p))
    throw RuntimeError("nccl reduce_scatter: " + to_string(in.shape()) + " -> " + to_string(out.shape()) +
                       " along dim " + std::to_string(d) + " over " + std::to_string(p) + " ranks");
  const void* src = s_->ptr(in, "reduce_scatter in");
  void* dst = s_->ptr(out, "reduce_scatter out");
  const Index outer = outer_of(in.shape(), d);
  Tensor packed = outer > 1 && p > 1 ? s_->device->empty(in.shape()) : Tensor();  // rt::chunks_strided
  const auto type = nccl_type(in.dtype());
  return s_->enqueue({in, out, packed}, [&] {
    if (packed.defined()) {  // [outer, P, chunk] -> [P, outer, chunk]: rank j's chunk contiguous
      s_->swap_outer(src, packed.storage()->data(), outer, p, in.numel() / (outer * p));
      src = packed.storage()->data();
    }
    SPSIM_NCCL_CHECK(ncclReduceScatter(src, dst, static_cast<std::size_t>(out.numel()), type, ncclSum,
                                       s_->comm, s_->stream));
  });
}

Work NcclComm::all_gather(const Tensor& in, Tensor& out, int dim) {
  const int d = normalize_dim(in, dim, "all_gather");
  const Index p = s_->size;
  if (out.shape() != with_dim(in.shape(), d, in.dim(d) * p))
    throw RuntimeError("nccl all_gather: " + to_string(in.shape()) + " -> " + to_string(out.shape()) +
                       " along dim " + std::to_string(d) + " over " + std::to_string(p) + " ranks");
  const void* src = s_->ptr(in, "all_gather in");
  void* dst = s_->ptr(out, "all_gather out");
  const Index outer = outer_of(in.shape(), d);
  Tensor packed = outer > 1 && p > 1 ? s_->device->empty(out.shape()) : Tensor();  // rt::chunks_strided
  const auto type = nccl_type(in.dtype());
  return s_->enqueue({in, out, packed}, [&] {
    void* gathered = packed.defined() ? packed.storage()->data() : dst;
    SPSIM_NCCL_CHECK(
        ncclAllGather(src, gathered, static_cast<std::size_t>(in.numel()), type, s_->comm, s_->stream));
    if (packed.defined())
      s_->swap_outer(gathered, dst, p, outer, in.numel() / outer);  // [P, outer, c] -> [outer, P, c]
  });
}

Work NcclComm::all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) {
  const int sd = normalize_dim(in, split_dim, "all_to_all split_dim");
  const int cd = normalize_dim(in, concat_dim, "all_to_all concat_dim");
  const Index p = s_->size;
  const Shape chunk = with_dim(in.shape(), sd, in.dim(sd) / p);
  if (in.dim(sd) % p || out.shape() != with_dim(chunk, cd, chunk[static_cast<std::size_t>(cd)] * p))
    throw RuntimeError("nccl all_to_all: " + to_string(in.shape()) + " -> " + to_string(out.shape()) +
                       " splitting dim " + std::to_string(sd) + ", concatenating dim " + std::to_string(cd) +
                       " over " + std::to_string(p) + " ranks");
  const void* src = s_->ptr(in, "all_to_all in");
  void* dst = s_->ptr(out, "all_to_all out");
  const Index outer_s = outer_of(in.shape(), sd), outer_c = outer_of(chunk, cd), chunk_n = numel(chunk);
  // Staged as rt::chunks_strided says (what the simulator charges).
  Tensor send_buf = outer_s > 1 && p > 1 ? s_->device->empty(in.shape()) : Tensor();
  Tensor recv_buf = outer_c > 1 && p > 1 ? s_->device->empty(out.shape()) : Tensor();
  const auto type = nccl_type(in.dtype());
  const std::size_t es = dtype_bytes(in.dtype());
  return s_->enqueue({in, out, send_buf, recv_buf}, [&] {
    if (send_buf.defined()) {  // chunk j of the split dim made contiguous
      s_->swap_outer(src, send_buf.storage()->data(), outer_s, p, in.numel() / (outer_s * p));
      src = send_buf.storage()->data();
    }
    auto* recv = static_cast<char*>(recv_buf.defined() ? recv_buf.storage()->data() : dst);
    SPSIM_NCCL_CHECK(ncclGroupStart());
    for (int j = 0; j < p; ++j) {
      const auto off = static_cast<std::size_t>(j * chunk_n) * es;
      SPSIM_NCCL_CHECK(ncclSend(static_cast<const char*>(src) + off, static_cast<std::size_t>(chunk_n), type,
                                j, s_->comm, s_->stream));
      SPSIM_NCCL_CHECK(
          ncclRecv(recv + off, static_cast<std::size_t>(chunk_n), type, j, s_->comm, s_->stream));
    }
    SPSIM_NCCL_CHECK(ncclGroupEnd());
    if (recv_buf.defined())
      s_->swap_outer(recv, dst, p, outer_c, chunk_n / outer_c);  // [P, oc, r] -> [oc, P, r]
  });
}

// ---- point to point -------------------------------------------------------------------------------

Work NcclComm::send(const Tensor& t, int dst, int /*tag*/) {
  s_->check_peer(dst, "send");
  const void* p = s_->ptr(t, "send");
  return s_->enqueue({t}, [&] {
    SPSIM_NCCL_CHECK(
        ncclSend(p, static_cast<std::size_t>(t.numel()), nccl_type(t.dtype()), dst, s_->comm, s_->stream));
  });
}

Work NcclComm::recv(Tensor& t, int src, int /*tag*/) {
  s_->check_peer(src, "recv");
  void* p = s_->ptr(t, "recv");
  return s_->enqueue({t}, [&] {
    SPSIM_NCCL_CHECK(
        ncclRecv(p, static_cast<std::size_t>(t.numel()), nccl_type(t.dtype()), src, s_->comm, s_->stream));
  });
}

Work NcclComm::sendrecv(const Tensor& out, int dst, Tensor& in, int src, int /*tag*/) {
  s_->check_peer(dst, "sendrecv");
  s_->check_peer(src, "sendrecv");
  const void* po = s_->ptr(out, "sendrecv out");
  void* pi = s_->ptr(in, "sendrecv in");
  return s_->enqueue({out, in}, [&] {
    SPSIM_NCCL_CHECK(ncclGroupStart());
    SPSIM_NCCL_CHECK(ncclSend(po, static_cast<std::size_t>(out.numel()), nccl_type(out.dtype()), dst,
                              s_->comm, s_->stream));
    SPSIM_NCCL_CHECK(
        ncclRecv(pi, static_cast<std::size_t>(in.numel()), nccl_type(in.dtype()), src, s_->comm, s_->stream));
    SPSIM_NCCL_CHECK(ncclGroupEnd());
  });
}

// ---- group management -----------------------------------------------------------------------------

void NcclComm::barrier() {
  Tensor token = s_->device->zeros({1});
  Work w = all_reduce(token);
  w.wait();
  SPSIM_CUDA_CHECK(cudaStreamSynchronize(s_->stream));
  s_->device->synchronize();
}

std::unique_ptr<Comm> NcclComm::split(const std::vector<int>& color_of_rank) {
  if (static_cast<int>(color_of_rank.size()) != s_->size)
    throw RuntimeError("nccl split: " + std::to_string(color_of_rank.size()) + " colors for " +
                       std::to_string(s_->size) + " ranks");
  const int color = color_of_rank[static_cast<std::size_t>(s_->rank)];
  if (color < 0) throw RuntimeError("nccl split: negative color " + std::to_string(color));
  auto s = std::make_unique<State>(*s_->device);
  SPSIM_NCCL_CHECK(ncclCommSplit(s_->comm, color, s_->rank, &s->comm, nullptr));
  SPSIM_NCCL_CHECK(ncclCommUserRank(s->comm, &s->rank));
  SPSIM_NCCL_CHECK(ncclCommCount(s->comm, &s->size));
  return std::unique_ptr<Comm>(new NcclComm(std::move(s)));
}

}  // namespace spsim::rt
