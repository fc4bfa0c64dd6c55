// Trace format helpers: stream names, group ids, live-byte peaks and the merged group table.
#include "runtime/core/trace_format.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "runtime/core/hash.hpp"

namespace spsim::rt::trace {

std::string_view stream_name(Stream s) {
  return s == Stream::compute ? "compute" : "comm";
}

const std::shared_ptr<const std::vector<int>>& GroupMembers::empty_list() {
  static const auto empty = std::make_shared<const std::vector<int>>();
  return empty;
}

GroupId group_id(std::span<const int> members) {
  // FNV-1a over the bytes of each member (little-endian, 4 bytes), then the count, so that the
  // empty list and {0} differ. Offset basis and prime are FNV's published 64-bit constants.
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 4; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  for (int m : members) mix(static_cast<std::uint32_t>(m));
  mix(members.size());
  return h;
}

std::uint64_t peak_live_bytes(const RankTrace& trace) {
  std::uint64_t live = 0, peak = 0;
  for (const Record& r : trace.records) {
    if (const auto* a = std::get_if<Alloc>(&r)) {
      live += a->bytes;
      peak = std::max(peak, live);
    } else if (const auto* f = std::get_if<Free>(&r)) {
      live -= f->bytes;
    }
  }
  return peak;
}

std::vector<Group> merge_groups(std::span<const RankTrace> traces) {
  std::map<GroupId, Group> all;
  for (const RankTrace& t : traces)
    for (const Group& g : t.groups) {
      auto [it, inserted] = all.emplace(g.id, g);
      if (!inserted && it->second.members != g.members)
        throw RuntimeError("trace: rank " + std::to_string(t.rank) + " has group " + std::to_string(g.id) +
                           " with members that differ from another rank's");
    }
  std::vector<Group> out;
  for (auto& [id, g] : all) {
    for (int m : g.members) {
      const bool has = m >= 0 && static_cast<std::size_t>(m) < traces.size() &&
                       std::ranges::any_of(traces[static_cast<std::size_t>(m)].groups,
                                           [&](const Group& x) { return x.id == id; });
      if (!has)
        throw RuntimeError("trace: rank " + std::to_string(m) + " is a member of group " +
                           std::to_string(id) + " but its trace does not list it");
    }
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

// The fields OpShapes compares, of an OpShapes or of operands given by address (OpShapesView): one
// hash and one equality for both, so a view finds the entry its OpShapes would.
struct OpShapesView {
  std::span<const Shape* const> operands;
  const KernelShapes& kernels;
};

struct OpShapesHash {
  using is_transparent = void;
  template <class Operands>
  static std::size_t hash(const Operands& operands, const KernelShapes& k, auto shape_of) {
    WordHash h;
    for (const auto& op : operands) {
      const Shape& shape = shape_of(op);
      h.add(shape.size());
      for (const std::int64_t d : shape) h.add(static_cast<std::uint64_t>(d));
    }
    h.add(static_cast<std::uint64_t>(k.launches)).add(k.aux_bytes);
    if (const auto& a = k.attention) {
      for (const std::int64_t v : {a->bq, a->bk, a->sq, a->sk, a->d, a->dv, a->offset})
        h.add(static_cast<std::uint64_t>(v));
      h.add(static_cast<std::uint64_t>(a->mask)).add(a->aux_bytes).add_double(a->fraction).add_double(a->active_rows);
    }
    for (const GemmShape& g : k.gemms)
      for (const std::int64_t v : {g.batch, g.m, g.n, g.k, g.c_bytes}) h.add(static_cast<std::uint64_t>(v));
    return h.value();
  }
  std::size_t operator()(const OpShapes& s) const {
    return hash(s.operands, s.kernels, [](const Shape& x) -> const Shape& { return x; });
  }
  std::size_t operator()(const OpShapesView& v) const {
    return hash(v.operands, v.kernels, [](const Shape* x) -> const Shape& { return *x; });
  }
};

struct OpShapesEqual {
  using is_transparent = void;
  bool operator()(const OpShapes& a, const OpShapes& b) const { return a == b; }
  bool operator()(const OpShapesView& v, const OpShapes& s) const { return same(v, s); }
  bool operator()(const OpShapes& s, const OpShapesView& v) const { return same(v, s); }
  static bool same(const OpShapesView& v, const OpShapes& s) {
    if (v.operands.size() != s.operands.size() || !(v.kernels == s.kernels)) return false;
    for (std::size_t i = 0; i < s.operands.size(); ++i)
      if (*v.operands[i] != s.operands[i]) return false;
    return true;
  }
};

const OpShapes& no_shapes() {
  static const OpShapes none;
  return none;
}

}  // namespace

struct ShapeTable::Impl {
  std::unordered_set<OpShapes, OpShapesHash, OpShapesEqual> shapes;  // node-based: addresses stay put
  std::unordered_set<std::string> names;                            // the same
  double bytes = 0;
};

ShapeTable::ShapeTable() : impl_(std::make_unique<Impl>()) {}
ShapeTable::~ShapeTable() = default;

const OpShapes* ShapeTable::intern(OpShapes shapes) {
  const auto [it, inserted] = impl_->shapes.insert(std::move(shapes));
  if (inserted) {
    double b = sizeof(OpShapes) + 4 * sizeof(void*);  // the node and its bucket
    for (const Shape& s : it->operands)
      b += static_cast<double>(sizeof(Shape) + s.capacity() * sizeof(std::int64_t));
    impl_->bytes += b;
  }
  return &*it;
}

std::string_view ShapeTable::name(std::string_view text) {
  const auto [it, inserted] = impl_->names.emplace(text);
  if (inserted) impl_->bytes += static_cast<double>(sizeof(std::string) + it->capacity() + 4 * sizeof(void*));
  return *it;
}

const OpShapes* ShapeTable::intern(std::span<const Shape* const> operands, const KernelShapes& kernels) {
  if (const auto it = impl_->shapes.find(OpShapesView{operands, kernels}); it != impl_->shapes.end()) return &*it;
  OpShapes shapes{{}, kernels};
  shapes.operands.reserve(operands.size());
  for (const Shape* s : operands) shapes.operands.push_back(*s);
  return intern(std::move(shapes));
}

double ShapeTable::bytes() const {
  return impl_->bytes;
}

const std::vector<Shape>& ComputeOp::shapes() const {
  return (detail ? *detail : no_shapes()).operands;
}
const KernelShapes& ComputeOp::kernels() const {
  return (detail ? *detail : no_shapes()).kernels;
}

}  // namespace spsim::rt::trace
