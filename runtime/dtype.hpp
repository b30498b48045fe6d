/// @file
/// The two element types matmem computes in: float32 for training, float64 for gradient checks.
#pragma once
#include <cstddef>
#include <string_view>

namespace matmem {

/// An element type: f32 (float, training) or f64 (double, gradient checks).
enum class DType { f32, f64 };

/// Bytes per element: 4 or 8.
constexpr std::size_t size_of(DType t) { return t == DType::f32 ? 4 : 8; }
/// "float32" or "float64".
constexpr std::string_view name_of(DType t) { return t == DType::f32 ? "float32" : "float64"; }

/// The DType of the C++ type T (float or double).
template <class T>
constexpr DType dtype_of();
/// DType::f32.
template <>
constexpr DType dtype_of<float>() { return DType::f32; }
/// DType::f64.
template <>
constexpr DType dtype_of<double>() { return DType::f64; }

/// Calls f(T{}) with T = float or double according to t.
template <class F>
decltype(auto) dispatch(DType t, F&& f) {
  if (t == DType::f32) return f(float{});
  return f(double{});
}

}  // namespace matmem
