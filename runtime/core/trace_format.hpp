// Trace format: what the data-less `trace` backend records per rank (runtime/trace/trace.hpp writes it)
// and the simulator replays.
//
// A RankTrace is the program-order list of Records one rank issued while running a strategy, plus the
// table of communication groups it was a member of. The simulator replays it (DESIGN.md §6) with these
// rules, which are what the recording means:
//
//  * Two streams per rank. ComputeOps run on the compute stream in record order; CommOps run on the
//    communication stream in record order (one stream: comm ops of a rank never overlap each other).
//  * A CommOp starts no earlier than the end of every ComputeOp recorded before it on the rank: its
//    buffers were produced by them (PyTorch's ProcessGroupNCCL makes the NCCL stream wait on the
//    compute stream the same way). A collective also waits until every member of its group has
//    posted it (matched by group id and `seq`); a send matches the receive with the same
//    (group, src, dst, tag, sequence number). A sendrecv is one op that ends when both its send and
//    its receive are done; a message to oneself (a ring of one rank) is a local copy. A collective
//    with strided chunks carries packs / unpacks: staging copies of its bytes run on the comm stream
//    before the member joins / after the exchange, as part of the op.
//  * Without a Wait a ComputeOp does not depend on any CommOp: this is the overlap.
//  * Wait{comm_record} (recorded by Work::wait()): every record after it (compute or comm) starts no
//    earlier than the end of the CommOp at index comm_record. Since the comm stream is in order, this
//    also covers every earlier CommOp of the rank.
//  * ComputeOp.skipped (a fully masked attention block): the kernel is never launched; it costs no
//    time, not even launch overhead, and is kept only so reports can count skipped blocks.
//  * Alloc/Free take effect at their place in record order (stream-ordered, as PyTorch's caching
//    allocator reuses a block freed on the host for the next kernels). Tensors alive when the trace
//    is taken have no Free. Storage ids are unique within a process, not only within a rank.
//  * PhaseBegin/PhaseEnd bracket the records issued between them (Device::begin_phase/end_phase);
//    phases nest; a phase's time runs from the first start to the last end of the ops inside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/core/comm_kind.hpp"
#include "runtime/core/kernel_shape.hpp"
#include "runtime/core/types.hpp"

namespace spsim::rt::trace {

enum class Stream : std::uint8_t { compute, comm };
[[nodiscard]] std::string_view stream_name(Stream s);

// Communication kinds are the runtime's one vocabulary (runtime/core/comm_kind.hpp).
using rt::comm_kind_name;
using rt::CommKind;

// Canonical id of a communication group: FNV-1a (64-bit) of its member list (world ranks, ascending),
// so every rank derives the same id locally. Groups with the same members share an id (and a
// sequence counter: SPMD code posts their collectives in the same order on every member).
using GroupId = std::uint64_t;
[[nodiscard]] GroupId group_id(std::span<const int> members);

// A group's members, one list shared by the copies of the group: every rank of a trace lists the world
// group, and on 8,192 ranks a copy of it per rank (and per copy of the rank's group table) was a
// quarter of the memory and most of the time to record each rank's first records. Immutable; reads
// as a std::vector<int>.
class GroupMembers {
 public:
  GroupMembers() : list_(empty_list()) {}
  GroupMembers(std::vector<int> members)  // NOLINT(google-explicit-constructor): a list is members
      : list_(std::make_shared<const std::vector<int>>(std::move(members))) {}
  GroupMembers(std::initializer_list<int> members) : GroupMembers(std::vector<int>(members)) {}
  explicit GroupMembers(std::shared_ptr<const std::vector<int>> list) : list_(std::move(list)) {}
  GroupMembers(const GroupMembers&) = default;
  GroupMembers& operator=(const GroupMembers&) = default;
  // A moved-from list is empty, as a moved-from std::vector is.
  GroupMembers(GroupMembers&& other) noexcept : list_(std::exchange(other.list_, empty_list())) {}
  GroupMembers& operator=(GroupMembers&& other) noexcept {
    list_ = std::exchange(other.list_, empty_list());
    return *this;
  }
  ~GroupMembers() = default;
  [[nodiscard]] const std::vector<int>& list() const { return *list_; }
  operator const std::vector<int>&() const { return *list_; }  // NOLINT(google-explicit-constructor)
  [[nodiscard]] std::size_t size() const { return list_->size(); }
  [[nodiscard]] bool empty() const { return list_->empty(); }
  [[nodiscard]] int operator[](std::size_t i) const { return (*list_)[i]; }
  [[nodiscard]] auto begin() const { return list_->begin(); }
  [[nodiscard]] auto end() const { return list_->end(); }
  friend bool operator==(const GroupMembers& a, const GroupMembers& b) {
    return a.list_ == b.list_ || *a.list_ == *b.list_;
  }

 private:
  static const std::shared_ptr<const std::vector<int>>& empty_list();
  std::shared_ptr<const std::vector<int>> list_;
};

struct Group {
  GroupId id = 0;
  GroupMembers members;  // world ranks; members[i] is rank i of the group (ascending)
  friend bool operator==(const Group&, const Group&) = default;
};

// The operand shapes and kernel shapes of a ComputeOp. Interned in a ShapeTable: a trace of thousands
// of ranks repeats a few launch shapes, and the ops share them instead of each holding its own.
struct OpShapes {
  std::vector<Shape> operands;  // in the method's argument order (undefined: [])
  KernelShapes kernels{};       // what the kernel models price (runtime/core/kernel_shape.hpp)
  friend bool operator==(const OpShapes&, const OpShapes&) = default;
};

// Distinct OpShapes, each stored once at a stable address (shared by the ranks of one trace).
class ShapeTable {
 public:
  ShapeTable();
  ~ShapeTable();
  ShapeTable(const ShapeTable&) = delete;
  ShapeTable& operator=(const ShapeTable&) = delete;
  [[nodiscard]] const OpShapes* intern(OpShapes shapes);
  // The same for operands given by address: an op whose shapes are in the table already (nearly
  // every op of a long trace) is found without copying them.
  [[nodiscard]] const OpShapes* intern(std::span<const Shape* const> operands, const KernelShapes& kernels);
  // `text` stored once, at a stable address (a phase's name).
  [[nodiscard]] std::string_view name(std::string_view text);
  [[nodiscard]] double bytes() const;  // what the table holds, for the trace-memory guard

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One Device op on the compute stream.
struct ComputeOp {
  static constexpr Stream stream = Stream::compute;
  std::string_view name;         // the Device method ("gemm", "attention_block_forward", ...); static storage
  double flops = 0;              // see runtime/cost.hpp
  std::uint64_t bytes_read = 0;  // bytes
  std::uint64_t bytes_written = 0;   // bytes
  const OpShapes* detail = nullptr;  // interned (the trace's ShapeTable); null: no operands, one launch
  OpClass op_class = OpClass::elementwise;
  bool skipped = false;  // fully masked attention block: no kernel, no time
  [[nodiscard]] std::uint64_t bytes() const { return bytes_read + bytes_written; }
  [[nodiscard]] const std::vector<Shape>& shapes() const;
  [[nodiscard]] const KernelShapes& kernels() const;
};

// One Comm call on the communication stream. Ranks are WORLD ranks.
struct CommOp {
  static constexpr Stream stream = Stream::comm;
  CommKind kind = CommKind::barrier;
  // Collectives with strided chunks (rt::chunks_strided): the backend copies the op's tensor (`bytes`:
  // reduce_scatter's and all_to_all's input, all_gather's and all_to_all's output) into a chunk-major
  // staging buffer before the exchange (packs) and out of one after it (unpacks); false if contiguous.
  // The copies run on the communication stream as part of the op (NCCL's pack kernels do; MPI packs
  // on the host when posting and unpacks in the wait).
  bool packs = false;
  bool unpacks = false;
  // Posted in one launch group (rt::Comm::begin_launch_group) with the comm op recorded before it: one
  // kernel runs both, so this op needs no SMs of its own (the replay's launch rule).
  bool joins_launch = false;
  int tag = 0;
  GroupId group = 0;
  // Collectives: n of the DESIGN.md §6 cost formulas and of nccl-tests' "size" column: the full,
  // un-chunked buffer on one rank — all_reduce: the in/out tensor; reduce_scatter: the input (P
  // chunks); all_gather: the output (P chunks); all_to_all: the input (= output size); barrier: 0.
  // Point-to-point: the bytes this rank sends (send, sendrecv; 0 for recv).
  std::uint64_t bytes = 0;
  std::uint64_t recv_bytes = 0;  // point-to-point: the bytes this rank receives (recv, sendrecv)
  int dst = -1;                  // send, sendrecv: receiver; -1 otherwise
  int src = -1;                  // recv, sendrecv: sender; -1 otherwise
  // Collectives: ordinal of this collective within the group (0, 1, ...; equal on every member).
  // send/sendrecv: ordinal of the send on channel (group, this rank -> dst, tag).
  std::uint64_t seq = 0;
  // recv/sendrecv: ordinal of the receive on channel (group, src -> this rank, tag); it matches the
  // send of the same ordinal on that channel.
  std::uint64_t recv_seq = 0;
  [[nodiscard]] std::uint64_t pack_bytes() const { return packs ? bytes : 0; }
  [[nodiscard]] std::uint64_t unpack_bytes() const { return unpacks ? bytes : 0; }
};
// Seven words: with the variant's index a Record is one cache line (the replay reads each record once,
// long after it was written, so a record costs a memory access, and two if it straddles lines).
static_assert(sizeof(CommOp) <= 56 && sizeof(ComputeOp) <= 56);

struct Wait {
  std::size_t comm_record = 0;  // index (in this rank's records) of the CommOp waited for
};
struct Alloc {
  std::uint64_t storage = 0;  // rt::Storage::id()
  std::uint64_t bytes = 0;
};
struct Free {
  std::uint64_t storage = 0;
  std::uint64_t bytes = 0;  // as allocated
};
// A phase's name is interned in the trace's ShapeTable (ShapeTable::name), or static storage: with
// every alternative trivially destructible a Record is too, so freeing a window of records the replay
// is done with does not read them back from memory to destroy them.
struct PhaseBegin {
  std::string_view name;
};
struct PhaseEnd {
  std::string_view name;
};

using Record = std::variant<ComputeOp, CommOp, Wait, Alloc, Free, PhaseBegin, PhaseEnd>;
static_assert(std::is_trivially_destructible_v<Record>);
static_assert(sizeof(Record) == 64);

struct RankTrace {
  int rank = 0;  // world rank
  DType dtype = DType::bf16;
  std::vector<Record> records;  // program order
  std::vector<Group> groups;    // groups this rank is a member of, in creation order (world first)
  std::shared_ptr<const ShapeTable> shapes;  // what the ComputeOps' `detail` points into
};

// Most bytes live at once: running sum of Alloc minus Free over the records.
[[nodiscard]] std::uint64_t peak_live_bytes(const RankTrace& trace);
// The union of every rank's group table, sorted by id; throws RuntimeError if two ranks disagree on
// the members of an id (or a member's trace lacks a group it belongs to).
[[nodiscard]] std::vector<Group> merge_groups(std::span<const RankTrace> traces);

}  // namespace spsim::rt::trace
