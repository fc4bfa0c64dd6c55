// CudaDevice: construction, memory, host transfers, timing, and the State helpers shared by the op files.
#include "runtime/cuda/cuda_device.hpp"

#include <string>

#include "runtime/cuda/detail/check.hpp"
#include "runtime/cuda/detail/state.hpp"

namespace spsim::rt {

using cuda_detail::CudaStorage;

// ---- errors and queries -------------------------------------------------------------------------

namespace cuda_detail {
void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw RuntimeError(std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                     ") in " + call + " at " + file + ":" + std::to_string(line));
}
void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw RuntimeError(std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" +
                     cublasGetStatusString(status) + ") in " + call + " at " + file + ":" +
                     std::to_string(line));
}
}  // namespace cuda_detail

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: not sticky, but clear it for the next caller
    return 0;
  }
  return n;
}

std::string cuda_device_name(int device_index) {
  cudaDeviceProp prop{};
  SPSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_index));
  return prop.name;
}

bool is_cuda_tensor(const Tensor& t) {
  return dynamic_cast<CudaStorage*>(t.storage()) != nullptr;
}

// ---- State helpers ----------------------------------------------------------------------------

void CudaDevice::State::activate() const {
  SPSIM_CUDA_CHECK(cudaSetDevice(index));
}

std::shared_ptr<CudaStorage> CudaDevice::State::scratch(std::size_t bytes) const {
  return std::make_shared<CudaStorage>(allocator, bytes);
}

void* CudaDevice::State::ptr(const Tensor& t, std::string_view what) const {
  if (!t.defined()) throw RuntimeError(std::string(what) + ": undefined tensor");
  if (!is_cuda_tensor(t)) throw RuntimeError(std::string(what) + ": not a CUDA tensor");
  if (t.dtype() != dtype)
    throw RuntimeError(std::string(what) + ": dtype " + std::string(dtype_name(t.dtype())) + " on a " +
                       std::string(dtype_name(dtype)) + " device");
  return t.storage()->data();
}

namespace cuda_detail {
OpScope::OpScope(CudaDevice::State& s, OpClass c) : s_(s), class_(c) {
  s_.activate();
  if (s_.op_timing) s_.op_classes.begin(op_class_name(class_), s_.stream);
}
OpScope::~OpScope() {
  if (s_.op_timing) s_.op_classes.end(op_class_name(class_), s_.stream);
}
}  // namespace cuda_detail

// ---- lifetime ------------------------------------------------------------------------------------

CudaDevice::CudaDevice(DType dtype, int device_index) : s_(std::make_unique<State>()) {
  const int count = cuda_device_count();
  if (device_index < 0 || device_index >= count)
    throw RuntimeError("CUDA device " + std::to_string(device_index) + " requested but " +
                       std::to_string(count) + " visible");
  s_->dtype = dtype;
  s_->index = device_index;
  s_->activate();
  s_->allocator = std::make_shared<cuda_detail::CachingAllocator>(device_index);
  SPSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking));
  if (const cublasStatus_t st = cublasCreate(&s_->blas); st != CUBLAS_STATUS_SUCCESS) {
    cudaStreamDestroy(s_->stream);
    cuda_detail::check_cublas(st, "cublasCreate", __FILE__, __LINE__);
  }
  SPSIM_CUBLAS_CHECK(cublasSetStream(s_->blas, s_->stream));
}

CudaDevice::~CudaDevice() {
  // No throwing here: errors at teardown have nowhere to go.
  cudaSetDevice(s_->index);
  cudaStreamSynchronize(s_->stream);
  s_->phases.reset();
  s_->op_classes.reset();
  cublasDestroy(s_->blas);
  cudaStreamDestroy(s_->stream);
}

DType CudaDevice::dtype() const {
  return s_->dtype;
}
int CudaDevice::device_index() const {
  return s_->index;
}
void* CudaDevice::stream_handle() const {
  return s_->stream;
}
CudaMemoryStats CudaDevice::memory_stats() const {
  return s_->allocator->stats();
}
void CudaDevice::set_attention_workspace_bytes(std::size_t bytes) {
  s_->attention_workspace_bytes = bytes;
}

// ---- memory and transfers ---------------------------------------------------------------------

Tensor CudaDevice::empty(const Shape& shape) {
  s_->activate();
  const auto bytes = static_cast<std::size_t>(numel(shape)) * dtype_bytes(s_->dtype);
  return Tensor(s_->scratch(bytes), shape, s_->dtype);
}

void CudaDevice::fill(Tensor& t, double value) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  cuda_detail::fill(s_->dtype, s_->ptr(t, "fill"), t.numel(), value, s_->stream);
}

Tensor CudaDevice::from_host(std::span<const double> values, const Shape& shape) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  if (static_cast<std::int64_t>(values.size()) != numel(shape))
    throw RuntimeError("from_host: " + std::to_string(values.size()) + " values for shape " +
                       to_string(shape));
  Tensor t = empty(shape);
  auto staging = s_->scratch(values.size_bytes());
  // Pageable source: cudaMemcpyAsync returns once it has staged the values, so `values` may go away.
  SPSIM_CUDA_CHECK(cudaMemcpyAsync(staging->data(), values.data(), values.size_bytes(),
                                   cudaMemcpyHostToDevice, s_->stream));
  cuda_detail::convert_from_f64(s_->dtype, static_cast<const double*>(staging->data()), t.storage()->data(),
                                t.numel(), s_->stream);
  return t;
}

std::vector<double> CudaDevice::to_host(const Tensor& t) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  const void* src = s_->ptr(t, "to_host");
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  auto staging = s_->scratch(out.size() * sizeof(double));
  cuda_detail::convert_to_f64(s_->dtype, src, static_cast<double*>(staging->data()), t.numel(), s_->stream);
  SPSIM_CUDA_CHECK(cudaMemcpyAsync(out.data(), staging->data(), out.size() * sizeof(double),
                                   cudaMemcpyDeviceToHost, s_->stream));
  SPSIM_CUDA_CHECK(cudaStreamSynchronize(s_->stream));
  return out;
}

void CudaDevice::download_bytes(const Tensor& src, std::span<std::byte> dst) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  if (dst.size() != src.nbytes())
    throw RuntimeError("download_bytes: " + std::to_string(dst.size()) + " bytes for a tensor of " +
                       std::to_string(src.nbytes()));
  SPSIM_CUDA_CHECK(cudaMemcpyAsync(dst.data(), s_->ptr(src, "download_bytes"), dst.size(),
                                   cudaMemcpyDeviceToHost, s_->stream));
  SPSIM_CUDA_CHECK(cudaStreamSynchronize(s_->stream));
}

void CudaDevice::upload_bytes(std::span<const std::byte> src, Tensor& dst) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  if (src.size() != dst.nbytes())
    throw RuntimeError("upload_bytes: " + std::to_string(src.size()) + " bytes for a tensor of " +
                       std::to_string(dst.nbytes()));
  SPSIM_CUDA_CHECK(cudaMemcpyAsync(s_->ptr(dst, "upload_bytes"), src.data(), src.size(),
                                   cudaMemcpyHostToDevice, s_->stream));
  SPSIM_CUDA_CHECK(cudaStreamSynchronize(s_->stream));
}

void CudaDevice::copy(const Tensor& src, Tensor& dst) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  if (src.numel() != dst.numel())
    throw RuntimeError("copy: " + to_string(src.shape()) + " into " + to_string(dst.shape()));
  SPSIM_CUDA_CHECK(cudaMemcpyAsync(s_->ptr(dst, "copy dst"), s_->ptr(src, "copy src"), src.nbytes(),
                                   cudaMemcpyDeviceToDevice, s_->stream));
}

// ---- timing ---------------------------------------------------------------------------------------

void CudaDevice::begin_phase(std::string_view name) {
  s_->activate();
  s_->phases.begin(name, s_->stream);
}
void CudaDevice::end_phase(std::string_view name) {
  s_->phases.end(name, s_->stream);
}
void CudaDevice::synchronize() {
  s_->activate();
  SPSIM_CUDA_CHECK(cudaStreamSynchronize(s_->stream));
}
std::vector<TimedInterval> CudaDevice::phase_times() {
  return s_->phases.totals();
}
void CudaDevice::set_op_timing(bool on) {
  s_->op_timing = on;
}
std::vector<TimedInterval> CudaDevice::op_class_times() {
  return s_->op_classes.totals();
}
void CudaDevice::reset_times() {
  s_->phases.reset();
  s_->op_classes.reset();
}

}  // namespace spsim::rt
