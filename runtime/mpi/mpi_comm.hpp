// The MPI backend of rt::Comm: MpiEnvironment (MPI_Init_thread / MPI_Finalize) and MpiComm (collectives,
// p2p and sub-groups on one MPI communicator). With abort.cpp, the only code that includes <mpi.h>.
#pragma once

// The C API only: OpenMPI's deprecated C++ bindings would need libmpi_cxx, which MPI::MPI_C does not link.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/comm.hpp"

namespace spsim::rt {

// An MPI call returned an error code; the message names the call and carries MPI's error string.
class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MpiComm;

// Owns MPI's lifetime in a process: MPI_Init_thread in the constructor, MPI_Finalize in the destructor.
// Asks for MPI_THREAD_SINGLE: only the main thread calls MPI. The watchdog thread (abort.hpp) makes no
// MPI call beyond the queries allowed from any thread; it would justify MPI_THREAD_FUNNELED, but with
// any level above SINGLE OpenMPI 4.1.4 hangs a rank whose receive is truncated instead of returning
// MPI_ERR_TRUNCATE (tests/mpi found it), and MPI_THREAD_MULTIPLE adds locking to every call. Installs
// MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF, so failures come back as MpiError (which the caller
// can report, then abort_all) instead of an immediate abort with no context. If MPI is already initialised,
// it neither initialises nor finalises.
class MpiEnvironment {
 public:
  MpiEnvironment();
  MpiEnvironment(int& argc, char**& argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  [[nodiscard]] int world_rank() const;
  [[nodiscard]] int world_size() const;
  // The thread support MPI granted (MPI_THREAD_SINGLE .. MPI_THREAD_MULTIPLE).
  [[nodiscard]] int thread_level() const { return thread_level_; }
  // A communicator over all processes (a duplicate of MPI_COMM_WORLD, so that our messages never
  // match anyone else's). Collective over MPI_COMM_WORLD.
  [[nodiscard]] std::unique_ptr<MpiComm> world() const;

 private:
  void init(int* argc, char*** argv);
  bool owns_ = false;
  int thread_level_ = 0;
};

// rt::Comm on an MPI communicator. Every operation is posted as a non-blocking MPI call (MPI_Iallreduce,
// MPI_Ireduce_scatter_block, MPI_Iallgather, MPI_Ialltoall, MPI_Isend/MPI_Irecv); the returned Work owns
// the requests, keeps the tensors and any staging buffer alive, and on wait() completes the requests and
// then unpacks. Chunks along dim > 0 are strided, so they are packed into (or received into) a
// contiguous staging buffer in rank order. Tensors must hold host memory (HostStorage); dtypes f32
// (MPI_FLOAT) and f64 (MPI_DOUBLE) only, anything else is a RuntimeError, as are shape misuses.
// MPI error codes become MpiError with the call's name and MPI's error string.
//
// A Work dropped without wait() completes its requests in its destructor, except while an exception
// unwinds the stack: a peer may never post the matching operation, and waiting would turn the failure
// into a hang before it reaches abort_all; then the buffers are deliberately leaked instead.
class MpiComm final : public Comm {
 public:
  // Takes ownership of `comm` (freed with MPI_Comm_free unless predefined or MPI is already finalised).
  explicit MpiComm(MPI_Comm comm);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  // A duplicate of MPI_COMM_WORLD. Collective; MPI must be initialised.
  [[nodiscard]] static std::unique_ptr<MpiComm> duplicate_world();

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] std::string_view backend() const override { return "mpi"; }
  [[nodiscard]] MPI_Comm handle() const { return comm_; }

  [[nodiscard]] Work all_reduce(Tensor& inout) override;
  [[nodiscard]] Work reduce_scatter(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_gather(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) override;

  [[nodiscard]] Work send(const Tensor& t, int dst, int tag = 0) override;
  [[nodiscard]] Work recv(Tensor& t, int src, int tag = 0) override;
  [[nodiscard]] Work sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag = 0) override;

  void barrier() override;
  // MPI_Comm_split with color color_of_rank[rank()] and key rank(); checks that MPI formed the group the
  // vector describes (a vector that differs between ranks shows up as a size/rank mismatch).
  [[nodiscard]] std::unique_ptr<Comm> split(const std::vector<int>& color_of_rank) override;

 private:
  void check_peer(int peer, int tag, std::string_view op) const;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int tag_upper_bound_ = 32767;  // MPI_TAG_UB; the standard guarantees at least this
};

}  // namespace spsim::rt
