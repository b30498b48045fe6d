// softmax along the last axis (cols): y_j = e^(x_j - m) / Σ_k e^(x_k - m), m = max_k x_k.
// grad_x_j += y_j (g_j - Σ_k g_k y_k).  x:[any] -> same shape, each run of `cols` elements normalised.
#include <algorithm>
#include <cmath>

#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/simd.hpp"
#include "ops/unary.hpp"

namespace matmem {
namespace {
template <class T>
struct SoftmaxKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t n = c.y_shape.cols, rows = c.y_shape.numel() / n;
    for (std::int64_t r = 0; r < rows; ++r) {
      ops::simd::softmax(c.x[0] + r * n, c.y + r * n, n);
    }
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    const std::int64_t n = c.y_shape.cols, rows = c.y_shape.numel() / n;
    for (std::int64_t r = 0; r < rows; ++r)
      ops::simd::softmax_backward(c.y + r * n, c.grad_y + r * n, n, c.grad_x[0] + r * n, /*accumulate=*/true);
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {4.0 * y.numel(), 4.0 * y.numel()}; }
constexpr OpDef kOp = make_op<SoftmaxKernel>("softmax", flops);
}  // namespace

Var softmax(Var x) { return x.tape->apply(kOp, {x}, x.shape()); }

OpEntry softmax_entry() {
  return {"softmax", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &softmax, -4.0, 4.0); }};
}

}  // namespace matmem
