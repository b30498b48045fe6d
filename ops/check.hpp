// Operand checks shared by the op front-ends. Messages name the op and every shape involved.
#pragma once
#include <string_view>

#include <fmt/format.h>

#include "matmem/autodiff/tape.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem::ops {

[[noreturn]] inline void shape_error(std::string_view op, std::string_view why, Var a, Var b) {
  throw ShapeError(fmt::format("{}: {} and {}: {}", op, a.shape().str(), b.shape().str(), why));
}
[[noreturn]] inline void shape_error(std::string_view op, std::string_view why, Var a) {
  throw ShapeError(fmt::format("{}: {}: {}", op, a.shape().str(), why));
}
inline void same_tape(std::string_view op, Var a, Var b) {
  if (!a.valid() || !b.valid()) throw Error(fmt::format("{}: an operand is an empty Var", op));
  if (a.tape != b.tape) throw Error(fmt::format("{}: operands {} and {} are on different tapes", op, a.shape().str(), b.shape().str()));
}
inline void same_shape(std::string_view op, Var a, Var b) {
  same_tape(op, a, b);
  if (a.shape() != b.shape()) shape_error(op, "shapes must be equal", a, b);
}
inline bool is_weighting(const Shape& s) { return s.slots == 1 && s.rows == 1; }  // [B,N]
inline bool is_scalars(const Shape& s) { return s.slots == 1 && s.rows == 1 && s.cols == 1; }  // [B,1]

}  // namespace matmem::ops

#include "matmem/ops/elementwise.hpp"

namespace matmem::ops {
// The broadcast result shape of a and b, or a ShapeError naming the op and both shapes.
inline Shape broadcast_or_throw(std::string_view op, Var a, Var b) {
  same_tape(op, a, b);
  Shape y;
  if (!broadcast_shape(a.shape(), b.shape(), y))
    shape_error(op, "shapes do not broadcast (along batch, slots, rows and cols each size must match or be 1)", a, b);
  return y;
}
}  // namespace matmem::ops
