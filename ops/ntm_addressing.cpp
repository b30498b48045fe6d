// ntm_addressing: one NTM head's weighting from its content similarities (000 §6, 001 §4; the NTM's
// eqs. 5–9), the composition
//   w_c = softmax(β K_h)                         K_h: row h of similarity [B,H,N]
//   w_g = g w_c + (1 − g) w_{t−1}
//   w̃  = circular_shift(w_g, s)                  w̃_i = Σ_k s_k w_g,(i−(k−S)) mod N
//   w  = sharpen(w̃, γ) = softmax(γ log(w̃ + ε))  ε = 1e-12
// in one kernel per batch item, its values equal to those of the composed ops (a test checks values and
// gradients against them). β, g, γ: [B,1]; s: [B,2S+1]; w_{t−1}: [B,N]; -> [B,N]. Backward, per item,
// with ∂ the upstream gradient of each stage (ȳ = upstream of w):
//   du = w ⊙ (ȳ − <ȳ, w>),  ∂γ += <du, log(w̃ + ε)>,  ∂w̃ = du γ / (w̃ + ε)
//   ∂w_g,j = Σ_k s_k ∂w̃_(j+k−S) mod N,  ∂s_k += Σ_i w_g,(i−k+S) mod N ∂w̃_i
//   ∂g += <∂w_g, w_c − w_{t−1}>,  ∂w_{t−1} += (1 − g) ∂w_g,  ∂w_c = g ∂w_g
//   dz = w_c ⊙ (∂w_c − <∂w_c, w_c>),  ∂β += <dz, K_h>,  ∂K_h += β dz
// Saved: w_c, w_g, w̃ + ε and log(w̃ + ε), each [B,N]. Scratch: four rows of N.
// Why one op: the composed form is nine small ops per head and step, each a pass over [B,N] with its own
// node, buffers and gradient; fused, the head's addressing is a few SIMD passes over one row in L1.
#include <algorithm>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/shift.hpp"
#include "ops/simd.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-12;  // as sharpen

template <class T>
struct NtmAddressingKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, K = c.x_shape[3].cols;
    const std::int64_t h = c.attrs.i[0];
    for (std::int64_t b = 0; b < B; ++b) {
      const T *sim = c.x[0] + (h * B + b) * N, *s = c.x[3] + b * K, *wp = c.x[5] + b * N;
      const T beta = c.x[1][b], g = c.x[2][b], gamma = c.x[4][b];
      T *wc = c.saved + b * N, *wg = wc + B * N, *wse = wg + B * N, *lws = wse + B * N;
      T* w = c.y + b * N;
      for (std::int64_t i = 0; i < N; ++i) wc[i] = beta * sim[i];
      ops::simd::softmax(wc, wc, N);
      for (std::int64_t i = 0; i < N; ++i) wg[i] = g * wc[i] + (T(1) - g) * wp[i];
      std::fill_n(wse, N, T(0));
      ops::shift_row(wg, s, K, N, wse);
      for (std::int64_t i = 0; i < N; ++i) wse[i] += T(kEps);
      ops::simd::log(wse, lws, N);
      for (std::int64_t i = 0; i < N; ++i) w[i] = gamma * lws[i];
      ops::simd::softmax(w, w, N);
    }
  }

  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, K = c.x_shape[3].cols;
    const std::int64_t h = c.attrs.i[0];
    T *gsim = c.grad_x[0], *gbeta = c.grad_x[1], *gg = c.grad_x[2], *gs = c.grad_x[3], *ggamma = c.grad_x[4],
      *gwp = c.grad_x[5];
    T *du = c.scratch, *gws = du + N, *gwg = gws + N, *dz = gwg + N;
    for (std::int64_t b = 0; b < B; ++b) {
      const T *sim = c.x[0] + (h * B + b) * N, *s = c.x[3] + b * K, *wp = c.x[5] + b * N;
      const T beta = c.x[1][b], g = c.x[2][b], gamma = c.x[4][b];
      const T *wc = c.saved + b * N, *wg = wc + B * N, *wse = wg + B * N, *lws = wse + B * N;
      const T *w = c.y + b * N, *gy = c.grad_y + b * N;
      // sharpen
      ops::simd::softmax_backward(w, gy, N, du);
      if (ggamma) ggamma[b] += ops::simd::dot(du, lws, N);
      for (std::int64_t i = 0; i < N; ++i) gws[i] = du[i] * gamma / wse[i];
      // circular shift
      std::fill_n(gwg, N, T(0));
      ops::shift_row_backward(wg, s, gws, K, N, gwg, gs ? gs + b * K : nullptr);
      // interpolation
      if (gg) gg[b] += ops::simd::dot(gwg, wc, N) - ops::simd::dot(gwg, wp, N);
      if (gwp)
        for (std::int64_t i = 0; i < N; ++i) gwp[b * N + i] += (T(1) - g) * gwg[i];
      // content softmax: ∂w_c = g ∂w_g
      if (gsim || gbeta) {
        ops::simd::softmax_backward(wc, gwg, N, dz);
        ops::simd::scale(dz, g, N);
        if (gbeta) gbeta[b] += ops::simd::dot(dz, sim, N);
        if (gsim) {
          T* gk = gsim + (h * B + b) * N;
          for (std::int64_t i = 0; i < N; ++i) gk[i] += beta * dz[i];
        }
      }
    }
  }
};

Flops flops(const Shape* x, int, const Shape& y, const OpAttrs&) {
  const double n = double(y.numel()), k = double(x[3].cols);
  return {n * (2.0 * k + 16.0), n * (4.0 * k + 24.0)};
}
constexpr OpDef kOp = make_op<NtmAddressingKernel>("ntm_addressing", flops);
}  // namespace

Var ntm_addressing(Var similarity, std::int64_t head, Var beta, Var gate, Var shift, Var gamma, Var w_prev) {
  const char* op = "ntm_addressing";
  for (const Var& v : {beta, gate, shift, gamma, w_prev}) ops::same_tape(op, similarity, v);
  const Shape& k = similarity.shape();
  if (k.slots != 1) ops::shape_error(op, "similarity must be [B,H,N] (or [B,N])", similarity);
  if (head < 0 || head >= k.rows)
    throw ShapeError(fmt::format("{}: head {} of similarity {} does not exist (rows 0..{})", op, head, k.str(),
                                 k.rows - 1));
  const Shape w = weighting(k.batch, k.cols);
  for (const Var& v : {beta, gate, gamma})
    if (v.shape() != scalars(k.batch))
      ops::shape_error(op, "beta, gate and gamma must be per-item scalars [B,1]", similarity, v);
  if (w_prev.shape() != w)
    ops::shape_error(op, "the previous weighting must be [B,N] like a similarity row", similarity, w_prev);
  const Shape& s = shift.shape();
  if (!ops::is_weighting(s) || s.batch != k.batch || s.cols % 2 == 0 || s.cols > k.cols)
    ops::shape_error(op, "the shift weighting must be [B,2S+1] with 2S+1 ≤ N", similarity, shift);
  OpAttrs attrs;
  attrs.i[0] = head;
  return similarity.tape->apply(kOp, {similarity, beta, gate, shift, gamma, w_prev}, w, attrs, 4 * w.numel(),
                                4 * k.cols);
}

OpEntry ntm_addressing_entry() {
  return {"ntm_addressing", [](Rng& rng, SampleSize size) {
            const SampleDims d = sample_dims(size);
            OpSample sample;
            // Values in the ranges the NTM gives them: β > 0, g in (0,1), s ≥ 0, γ ≥ 1, w_{t−1} ≥ 0.
            sample.inputs = {{"similarity", random_tensor(rng, matrices(d.batch, 2, d.slots))},
                             {"beta", random_tensor(rng, scalars(d.batch), 0.2, 3.0)},
                             {"gate", random_tensor(rng, scalars(d.batch), 0.05, 0.95)},
                             {"shift", random_tensor(rng, weighting(d.batch, 3), 0.05, 1.0)},
                             {"gamma", random_tensor(rng, scalars(d.batch), 1.0, 3.0)},
                             {"w_prev", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> x) {
              return ntm_addressing(x[0], 1, x[1], x[2], x[3], x[4], x[5]);
            };
            return sample;
          }};
}

}  // namespace matmem
