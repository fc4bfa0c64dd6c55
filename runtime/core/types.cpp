// Names and sizes of the runtime's value types.
#include "runtime/core/types.hpp"

namespace spsim::rt {

std::size_t dtype_bytes(DType dt) {
  switch (dt) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::bf16:
    case DType::f16:
      return 2;
  }
  return 0;
}

DType accumulator_dtype(DType dt) {
  return dtype_bytes(dt) < dtype_bytes(DType::f32) ? DType::f32 : dt;
}

std::string_view dtype_name(DType dt) {
  switch (dt) {
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "fp16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  if (n == "float32" || n == "f32" || n == "fp32") return DType::f32;
  if (n == "float64" || n == "f64" || n == "fp64") return DType::f64;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "fp16" || n == "f16" || n == "float16") return DType::f16;
  return std::nullopt;
}

std::int64_t numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::gemm:
      return "gemm";
    case OpClass::attention_forward:
      return "attention_forward";
    case OpClass::attention_backward:
      return "attention_backward";
    case OpClass::softmax:
      return "softmax";
    case OpClass::elementwise:
      return "elementwise";
    case OpClass::copy:
      return "copy";
  }
  return "?";
}

}  // namespace spsim::rt
