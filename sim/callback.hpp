// Callback: a move-only `void()` callable that keeps small captures inline.
//
// Every simulated event, flow and point-to-point message carries one; with std::function (16 bytes
// of inline storage in libstdc++) nearly every one was a heap allocation and a free, about a tenth of
// a large replay's time. Captures up to `kInline` bytes live in the object; larger ones go to the heap.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace spsim::sim {

class Callback {
 public:
  static constexpr std::size_t kInline = 64;

  Callback() noexcept = default;
  Callback(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): as std::function
  template <class F, class D = std::decay_t<F>>
    requires(!std::is_same_v<D, Callback> && std::is_invocable_r_v<void, D&>)
  Callback(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert, as to std::function
    if constexpr (fits<D>) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(buf_)) D*(new D(std::forward<F>(f)));
      ops_ = &kHeapOps<D>;
    }
  }
  Callback(Callback&& other) noexcept { take(other); }
  Callback& operator=(Callback&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Callback& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  // Calls the target (which must exist). Const like std::function's: the target itself may change.
  void operator()() const { ops_->call(const_cast<unsigned char*>(buf_)); }

 private:
  struct Ops {
    void (*call)(void*);
    void (*move)(void* from, void* to) noexcept;  // constructs at `to`, destroys `from`
    void (*destroy)(void*) noexcept;
  };
  template <class D>
  static constexpr bool fits = sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                               std::is_nothrow_move_constructible_v<D>;
  template <class D>
  static constexpr Ops kInlineOps{
      [](void* p) { (*static_cast<D*>(p))(); },
      [](void* from, void* to) noexcept {
        ::new (to) D(std::move(*static_cast<D*>(from)));
        static_cast<D*>(from)->~D();
      },
      [](void* p) noexcept { static_cast<D*>(p)->~D(); }};
  template <class D>
  static constexpr Ops kHeapOps{
      [](void* p) { (**static_cast<D**>(p))(); },
      [](void* from, void* to) noexcept { ::new (to) D*(*static_cast<D**>(from)); },
      [](void* p) noexcept { delete *static_cast<D**>(p); }};

  void take(Callback& other) noexcept {
    if (!other.ops_) return;
    other.ops_->move(other.buf_, buf_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }
  void reset() noexcept {
    if (!ops_) return;
    ops_->destroy(buf_);
    ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace spsim::sim
