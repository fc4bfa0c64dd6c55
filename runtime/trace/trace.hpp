// Trace recording: the Recorder that writes a rank's trace (the format is runtime/core/trace_format.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/core/trace_format.hpp"

namespace spsim::rt::trace {

// Appends one rank's records. A cheap handle: copies share one log, and every TraceStorage and
// pending Work holds a copy, so a tensor freed after the Device is gone still records safely.
class Recorder {
 public:
  // `shapes` is shared by the recorders of one trace (trace_ranks); a recorder without one makes its own.
  Recorder(int rank, DType dtype, std::shared_ptr<ShapeTable> shapes = nullptr);
  [[nodiscard]] int rank() const;
  [[nodiscard]] DType dtype() const;
  std::size_t add(Record record);                         // returns the record's index
  void reserve(std::size_t records);                      // room for this many records
  // For a ComputeOp's `detail`: the operands' shapes and the kernels, interned in the shared table.
  [[nodiscard]] const OpShapes* intern(std::span<const Shape* const> operands, const KernelShapes& kernels);
  // A phase's name, interned in the shared table.
  [[nodiscard]] std::string_view name(std::string_view text);
  void add_group(const Group& group);                     // no-op if already known
  [[nodiscard]] std::uint64_t next_collective_seq(GroupId group);
  [[nodiscard]] std::uint64_t next_p2p_seq(GroupId group, int src, int dst, int tag);
  [[nodiscard]] const std::vector<Record>& records() const;
  // Moves the trace out; later records start a new, empty trace.
  [[nodiscard]] RankTrace take();

  // Streaming (TraceStreams): once the log holds `chunk` records, add() calls `full`, which hands them
  // on (drain) and returns when more are wanted. Indices keep counting across drains.
  void stream_to(std::size_t chunk, std::function<void()> full);
  // Moves the records logged since the last drain to the back of `out`.
  void drain(std::vector<Record>& out);
  // Records nothing from now on and never calls `full` again (the consumer went away).
  void discard();
  // From now on Alloc and Free are not logged but summed as they come: peak_bytes() is the most live
  // bytes at any point of the rank's program, as a walk over the records in order would find (the
  // replay's peak). For a consumer that needs the peak and not the memory curve; add() returns the
  // index the next logged record will have for them.
  void fold_memory();
  [[nodiscard]] std::uint64_t peak_bytes() const;
  [[nodiscard]] const std::vector<Group>& groups() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace spsim::rt::trace
