// bce_with_logits: L = (1/n) Σ_k [max(x_k,0) - x_k t_k + log1p(e^-|x_k|)]  (= BCE of sigmoid(x) against t,
// with no exp of a positive number, so it is exact and finite for any logit).   x, t:[any] -> [1,1,1]
//   grad_x += g (sigmoid(x) - t) / n,   grad_t += -g x / n
#include <algorithm>
#include <cmath>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"

namespace matmem {
namespace {
template <class T>
struct BceWithLogitsKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t n = c.x_shape[0].numel();
    const T *x = c.x[0], *t = c.x[1];
    T total = 0;
    alignas(64) T sp[ops::simd::kChunk];
    for (std::int64_t k = 0; k < n; k += ops::simd::kChunk) {
      const std::int64_t m = std::min(ops::simd::kChunk, n - k);
      ops::simd::softplus(x + k, sp, m);  // max(x,0) + log1p(e^-|x|)
      for (std::int64_t q = 0; q < m; ++q) total += sp[q] - x[k + q] * t[k + q];
    }
    c.y[0] = total / T(n);
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t n = c.x_shape[0].numel();
    const T *x = c.x[0], *t = c.x[1];
    const T s = c.grad_y[0] / T(n);
    if (T* gx = c.grad_x[0])
      ops::simd::sigmoid_chunks(x, n, [&](std::int64_t k, const T* sg, std::int64_t m) {
        for (std::int64_t q = 0; q < m; ++q) gx[k + q] += s * (sg[q] - t[k + q]);
      });
    if (T* gt = c.grad_x[1])
      for (std::int64_t k = 0; k < n; ++k) gt[k] -= s * x[k];
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) { return {6.0 * x[0].numel(), 4.0 * x[0].numel()}; }
constexpr OpDef kOp = make_op<BceWithLogitsKernel>("bce_with_logits", flops);
}  // namespace

Var bce_with_logits(Var logits, Var target) {
  ops::same_shape("bce_with_logits", logits, target);
  return logits.tape->apply(kOp, {logits, target}, scalars(1));
}

OpEntry bce_with_logits_entry() {
  return {"bce_with_logits", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            Tensor x = random_tensor(rng, matrices(d.batch, d.rows, d.cols), -6.0, 6.0);
            x.set(0, 60.0);  // far past where log(1 + e^x) would overflow in float
            x.set(1, -60.0);
            sample.inputs = {{"logits", std::move(x)},
                             {"target", random_tensor(rng, matrices(d.batch, d.rows, d.cols), 0.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> v) { return bce_with_logits(v[0], v[1]); };
            return sample;
          }};
}

}  // namespace matmem
