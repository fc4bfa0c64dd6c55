// The runtime's value types that every layer shares: element types, shapes, op classes and the
// runtime's programming-error exception. No tensors, devices or communicators here, so the simulator
// can read traces without the Device interface.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spsim::rt {

// Element types. The CPU backend computes in f32/f64; bf16/f16 exist for sizes in traces and on GPUs.
enum class DType : std::uint8_t { f32, f64, bf16, f16 };

[[nodiscard]] std::size_t dtype_bytes(DType dt);
// The type partial sums are kept in on hardware that computes in `dt` (Device::empty_accumulator):
// f32 for the 2-byte types, else dt itself.
[[nodiscard]] DType accumulator_dtype(DType dt);
[[nodiscard]] std::string_view dtype_name(DType dt);
[[nodiscard]] std::optional<DType> parse_dtype(std::string_view name);  // "float32"/"f32"/"fp32", ...

using Shape = std::vector<std::int64_t>;
[[nodiscard]] std::int64_t numel(const Shape& shape);
[[nodiscard]] std::string to_string(const Shape& shape);  // "[2, 3, 4]"

// Op classes, for cost accounting (simulator compute model, run timing, benchmarks).
enum class OpClass : std::uint8_t { gemm, attention_forward, attention_backward, softmax, elementwise, copy };
inline constexpr int kOpClasses = 6;
[[nodiscard]] std::string_view op_class_name(OpClass c);

// Thrown for a shape/dtype misuse of the runtime (a programming error in a strategy, not user input).
class RuntimeError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace spsim::rt
