// softmax along the last axis (cols): y_j = e^(x_j - m) / Σ_k e^(x_k - m), m = max_k x_k.
// grad_x_j += y_j (g_j - Σ_k g_k y_k).  x:[any] -> same shape, each row (b, n, i) of `cols` elements
// normalised. A row is contiguous except in a memory (batch innermost, runtime/shape.hpp), where its elements
// are B apart: those rows are gathered into scratch, normalised there and scattered back.
#include <algorithm>
#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
template <class T>
struct SoftmaxKernel {
  // Calls f(x_row, y_row, g_row, gx_row) on contiguous rows: in place for a batch of matrices, through
  // scratch copies (4 rows of `cols`) for a memory, whose rows are strided; gx is written back if given.
  template <class F>
  static void for_each_row(const OpCall<T>& c, const T* g, T* gx, F&& f) {
    const Shape& s = c.y_shape;
    const std::int64_t n = s.cols;
    if (s.slots == 1) {
      for (std::int64_t r = 0; r < s.numel() / n; ++r)
        f(c.x[0] + r * n, c.y + r * n, g ? g + r * n : nullptr, gx ? gx + r * n : nullptr);
      return;
    }
    T *xr = c.scratch, *yr = xr + n, *gr = yr + n, *gxr = gr + n;
    const std::int64_t B = s.batch;
    for (std::int64_t k = 0; k < s.slots * s.rows; ++k)
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t o = k * n * B + b;  // element j of the row at o + j·B
        for (std::int64_t j = 0; j < n; ++j) {
          xr[j] = c.x[0][o + j * B], yr[j] = c.y[o + j * B];
          if (g) gr[j] = g[o + j * B], gxr[j] = gx[o + j * B];
        }
        f(xr, yr, gr, gxr);
        for (std::int64_t j = 0; j < n; ++j) {
          if (g) gx[o + j * B] = gxr[j];
          else c.y[o + j * B] = yr[j];
        }
      }
  }
  static void forward(const OpCall<T>& c) {
    const std::int64_t n = c.y_shape.cols;
    for_each_row(c, nullptr, nullptr, [&](const T* x, T* y, const T*, T*) { ops::simd::softmax(x, y, n); });
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    const std::int64_t n = c.y_shape.cols;
    for_each_row(c, c.grad_y, c.grad_x[0], [&](const T*, T* y, const T* g, T* gx) {
      ops::simd::softmax_backward(y, g, n, gx, /*accumulate=*/true);
    });
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {4.0 * y.numel(), 4.0 * y.numel()}; }
constexpr OpDef kOp = make_op<SoftmaxKernel>("softmax", flops);
}  // namespace

Var softmax(Var x) {
  const Shape& s = x.shape();
  return x.tape->apply(kOp, {x}, s, {}, 0, s.slots > 1 ? 4 * s.cols : 0);
}

OpEntry softmax_entry() {
  return {"softmax", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &softmax, -4.0, 4.0); }};
}

}  // namespace matmem
