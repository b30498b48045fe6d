// Internal: loops for elementwise ops over the physical layout (runtime/shape.hpp), with broadcasting.
#pragma once
#include <cstdint>

#include "matmem/runtime/shape.hpp"

namespace matmem::ops {

// Result shape of broadcasting a and b (each dim equal, or 1); false if they do not broadcast.
inline bool broadcast_shape(const Shape& a, const Shape& b, Shape& out) {
  auto dim = [](std::int64_t x, std::int64_t y, std::int64_t& o) {
    if (x == y || y == 1) { o = x; return true; }
    if (x == 1) { o = y; return true; }
    return false;
  };
  return dim(a.batch, b.batch, out.batch) && dim(a.slots, b.slots, out.slots) && dim(a.rows, b.rows, out.rows) &&
         dim(a.cols, b.cols, out.cols);
}

// Calls f(o, oa, ob) for every element of a result y that is a memory (y.slots > 1, batch innermost) broadcast
// from a or b: each operand is indexed through its own layout, 0 along the dims it is broadcast over.
template <class F>
inline void for_each_broadcast_memory(const Shape& y, const Shape& a, const Shape& b, F&& f) {
  // Along the batch (innermost in y) each operand moves by a fixed stride: 1 in a memory, c in a batch of
  // matrices, 0 if it is broadcast over the batch.
  auto base = [](const Shape& x, std::int64_t n, std::int64_t i, std::int64_t j) {
    return x.offset(0, x.slots == 1 ? 0 : n, x.rows == 1 ? 0 : i, x.cols == 1 ? 0 : j);
  };
  auto batch_stride = [](const Shape& x) -> std::int64_t { return x.batch == 1 ? 0 : x.slots > 1 ? 1 : x.cols; };
  const std::int64_t sa = batch_stride(a), sb = batch_stride(b);
  std::int64_t o = 0;
  for (std::int64_t n = 0; n < y.slots; ++n)
    for (std::int64_t i = 0; i < y.rows; ++i)
      for (std::int64_t j = 0; j < y.cols; ++j) {
        const std::int64_t oa = base(a, n, i, j), ob = base(b, n, i, j);
        for (std::int64_t bb = 0; bb < y.batch; ++bb, ++o) f(o, oa + bb * sa, ob + bb * sb);
      }
}

// Strides of operand x inside result y, 0 along broadcast dims; order (slot, row, batch, col). For a
// result with N = 1 (a memory result goes through for_each_broadcast_memory).
struct Strides {
  std::int64_t n, i, b, j;
};
inline Strides strides_in(const Shape& x, const Shape& y) {
  return {x.slots == y.slots ? x.rows * x.batch * x.cols : 0, x.rows == y.rows ? x.batch * x.cols : 0,
          x.batch == y.batch ? x.cols : 0, x.cols == y.cols ? 1 : 0};
}

// Calls f(o, oa, ob) for every flat result index o with the matching flat indices into a and b.
template <class F>
inline void for_each_broadcast(const Shape& y, const Shape& a, const Shape& b, F&& f) {
  if (a == y && b == y) {
    const std::int64_t n = y.numel();
    for (std::int64_t o = 0; o < n; ++o) f(o, o, o);
    return;
  }
  if (y.slots > 1) return for_each_broadcast_memory(y, a, b, f);
  const Strides sa = strides_in(a, y), sb = strides_in(b, y);
  std::int64_t o = 0;
  for (std::int64_t n = 0; n < y.slots; ++n)
    for (std::int64_t i = 0; i < y.rows; ++i)
      for (std::int64_t bb = 0; bb < y.batch; ++bb, o += y.cols) {
        const std::int64_t ba = n * sa.n + i * sa.i + bb * sa.b, bbb = n * sb.n + i * sb.i + bb * sb.b;
        // One loop per stride pattern, so each inner loop has unit or zero strides and vectorises.
        if (sa.j && sb.j)
          for (std::int64_t j = 0; j < y.cols; ++j) f(o + j, ba + j, bbb + j);
        else if (sb.j)
          for (std::int64_t j = 0; j < y.cols; ++j) f(o + j, ba, bbb + j);
        else if (sa.j)
          for (std::int64_t j = 0; j < y.cols; ++j) f(o + j, ba + j, bbb);
        else
          for (std::int64_t j = 0; j < y.cols; ++j) f(o + j, ba, bbb);
      }
}

// Calls f(o, oa, ob, ja, jb, len) for each run of y.cols results (one row of one batch item), where o, oa, ob
// are the runs' starts in y, a and b and ja, jb (0 or 1) their strides along the run: a kernel can then
// turn the gradient of an operand broadcast along the run (stride 0) into one SIMD reduction.
template <class F>
inline void for_each_broadcast_row(const Shape& y, const Shape& a, const Shape& b, F&& f) {
  if (y.slots > 1)  // a memory result: runs of one element
    return for_each_broadcast_memory(y, a, b, [&](std::int64_t o, std::int64_t oa, std::int64_t ob) { f(o, oa, ob, 1, 1, 1); });
  const Strides sa = strides_in(a, y), sb = strides_in(b, y);
  std::int64_t o = 0;
  for (std::int64_t n = 0; n < y.slots; ++n)
    for (std::int64_t i = 0; i < y.rows; ++i)
      for (std::int64_t bb = 0; bb < y.batch; ++bb, o += y.cols)
        f(o, n * sa.n + i * sa.i + bb * sa.b, n * sb.n + i * sb.i + bb * sb.b, sa.j, sb.j, y.cols);
}

}  // namespace matmem::ops
