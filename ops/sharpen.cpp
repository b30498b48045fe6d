// sharpen: y_{b,i} = (w_{b,i} + ε)^γ_b / Σ_k (w_{b,k} + ε)^γ_b,  ε = 1e-12.   w:[B,N] (≥ 0), γ:[B,1] -> [B,N]
// Computed as the softmax of u_i = γ log(w_i + ε), so large γ or tiny weights neither overflow nor give
// 0/0, and with ε the gradient of 0^γ stays finite. With du_i = y_i (g_i - Σ_k g_k y_k):
//   grad_w_i += du_i γ / (w_i + ε),   grad_γ += Σ_i du_i log(w_i + ε).
// Saved: log(w + ε) [B,N]; scratch: one row [N].
#include <algorithm>
#include <cmath>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-12;

template <class T>
struct SharpenKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    for (std::int64_t b = 0; b < B; ++b) {
      const T* w = c.x[0] + b * N;
      const T gamma = c.x[1][b];
      T *lw = c.saved + b * N, *y = c.y + b * N;
      for (std::int64_t i = 0; i < N; ++i) y[i] = w[i] + T(kEps);
      ops::simd::log(y, lw, N);
      for (std::int64_t i = 0; i < N; ++i) y[i] = gamma * lw[i];
      ops::simd::softmax(y, y, N);
    }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    T *gw = c.grad_x[0], *gg = c.grad_x[1];
    for (std::int64_t b = 0; b < B; ++b) {
      const T *w = c.x[0] + b * N, *y = c.y + b * N, *g = c.grad_y + b * N, *lw = c.saved + b * N;
      const T gamma = c.x[1][b];
      T* du = c.scratch;  // one row
      ops::simd::softmax_backward(y, g, N, du);
      if (gw)
        for (std::int64_t i = 0; i < N; ++i) gw[b * N + i] += du[i] * gamma / (w[i] + T(kEps));
      if (gg) gg[b] += ops::simd::dot(du, lw, N);
    }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {5.0 * y.numel(), 6.0 * y.numel()}; }
constexpr OpDef kOp = make_op<SharpenKernel>("sharpen", flops);
}  // namespace

Var sharpen(Var w, Var gamma) {
  ops::same_tape("sharpen", w, gamma);
  const Shape &ws = w.shape(), &gs = gamma.shape();
  if (!ops::is_weighting(ws) || !ops::is_scalars(gs) || ws.batch != gs.batch)
    ops::shape_error("sharpen", "w must be [B,N] and gamma [B,1] with the same B", w, gamma);
  return w.tape->apply(kOp, {w, gamma}, ws, {}, ws.numel(), ws.cols);
}

OpEntry sharpen_entry() {
  return {"sharpen", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"w", random_tensor(rng, weighting(d.batch, d.slots), 0.05, 1.0)},
                             {"gamma", random_tensor(rng, scalars(d.batch), 1.0, 4.0)}};
            sample.apply = [](Tape&, std::span<const Var> x) { return sharpen(x[0], x[1]); };
            return sample;
          }};
}

}  // namespace matmem
