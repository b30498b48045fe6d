// softmax_cross_entropy: L = -(1/rows) Σ_rows Σ_j t_j ℓ_j, ℓ = log softmax(x) along the last axis
// (ℓ_j = x_j - m - log Σ_k e^(x_k - m), m the row max: no overflow). t are probabilities per row.
//   x, t:[any] (rows = numel / cols) -> [1,1,1]
//   grad_x_j += g (softmax(x)_j Σ_k t_k - t_j) / rows,   grad_t_j += -g ℓ_j / rows
// Saved: ℓ.
#include <algorithm>
#include <cmath>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct SoftmaxCrossEntropyKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t n = c.x_shape[0].cols, rows = c.x_shape[0].numel() / n;
    T total = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const T *x = c.x[0] + r * n, *t = c.x[1] + r * n;
      T* l = c.saved + r * n;
      const T m = *std::max_element(x, x + n);
      T z = 0;
      for (std::int64_t j = 0; j < n; ++j) z += std::exp(x[j] - m);
      const T lz = std::log(z);
      for (std::int64_t j = 0; j < n; ++j) {
        l[j] = x[j] - m - lz;
        total -= t[j] * l[j];
      }
    }
    c.y[0] = total / T(rows);
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t n = c.x_shape[0].cols, rows = c.x_shape[0].numel() / n;
    const T s = c.grad_y[0] / T(rows);
    T *gx = c.grad_x[0], *gt = c.grad_x[1];
    for (std::int64_t r = 0; r < rows; ++r) {
      const T *t = c.x[1] + r * n, *l = c.saved + r * n;
      T tsum = 0;
      for (std::int64_t j = 0; j < n; ++j) tsum += t[j];
      for (std::int64_t j = 0; j < n; ++j) {
        if (gx) gx[r * n + j] += s * (std::exp(l[j]) * tsum - t[j]);
        if (gt) gt[r * n + j] -= s * l[j];
      }
    }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) { return {5.0 * x[0].numel(), 4.0 * x[0].numel()}; }
constexpr OpDef kOp = make_op<SoftmaxCrossEntropyKernel>("softmax_cross_entropy", flops);
}  // namespace

Var softmax_cross_entropy(Var logits, Var target) {
  ops::same_shape("softmax_cross_entropy", logits, target);
  if (logits.shape().slots != 1)
    ops::shape_error("softmax_cross_entropy", "logits must be a batch of matrices [B,r,c], not a memory", logits);
  return logits.tape->apply(kOp, {logits, target}, scalars(1), {}, logits.shape().numel());
}

OpEntry softmax_cross_entropy_entry() {
  return {"softmax_cross_entropy", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"logits", random_tensor(rng, matrices(d.batch, d.rows, d.cols), -4.0, 4.0)},
                             {"target", random_tensor(rng, matrices(d.batch, d.rows, d.cols), 0.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> v) { return softmax_cross_entropy(v[0], v[1]); };
            return sample;
          }};
}

}  // namespace matmem
