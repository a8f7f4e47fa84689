// Element types of tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace osprey {

/// The element type of a tensor. float32 is Keras's floatx; int32/int64 hold labels and indices; bool_ (one byte,
/// 0 or 1) is what comparisons give (Keras's "bool"); float16 (IEEE half) and bfloat16 are mixed precision's
/// compute types (two bytes each).
enum class DType : uint8_t { float32, float64, int32, int64, bool_, float16, bfloat16 };

inline constexpr DType float32 = DType::float32;
inline constexpr DType float64 = DType::float64;
inline constexpr DType int32 = DType::int32;
inline constexpr DType int64 = DType::int64;
inline constexpr DType bool_ = DType::bool_;
inline constexpr DType float16 = DType::float16;
inline constexpr DType bfloat16 = DType::bfloat16;

/// float16 or bfloat16.
inline constexpr bool is_half(DType t) { return t == DType::float16 || t == DType::bfloat16; }
/// float16, bfloat16, float32 or float64.
inline constexpr bool is_floating(DType t) { return t == DType::float32 || t == DType::float64 || is_half(t); }

/// Size of one element in bytes.
std::size_t dtype_size(DType dtype);
/// TensorFlow's name of the type: "float32", "int64", ...
std::string dtype_name(DType dtype);
/// Parses "float32", "float64", "int32", "int64", "bool", "float16", "bfloat16"; throws ValueError otherwise.
DType dtype_from_name(const std::string& name);

/// Maps a C++ element type to its DType.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::float32; }
template <>
constexpr DType dtype_of<double>() { return DType::float64; }
template <>
constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <>
constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <>
constexpr DType dtype_of<bool>() { return DType::bool_; }

}  // namespace osprey
