// dnc_forward_weighting and dnc_backward_weighting: a DNC read head's weightings along the temporal links
// (spec/dnc.md §6; [N] and [D] `TemporalLinkage.directional_read_weights` agree), L = L_t, w = w^r_{t−1}:
//   forward:   f_i = Σ_j L[i,j] w_j   (f = L w)    grad_L[i,j] += g_i w_j,  grad_w_j += Σ_i L[i,j] g_i
//   backward:  b_j = Σ_i L[i,j] w_i   (b = Lᵀ w)   grad_L[i,j] += w_i g_j,  grad_w_i += Σ_j L[i,j] g_j
//   L:[B,N,N], w:[B,N] -> [B,N]; O(N²) per sample and head.
// f is vec_matvec(L, w) (ops/fast_weight_matrix.cpp; a test checks them equal); b would be that of
// transpose(L), one more pass over L and its gradient: one kernel serves both, reading L by rows either way.
// Layout: L's row i of sample b is contiguous at (i·B + b)·N; weightings are row-major [B,1,N]. No buffers.
#include "matmem/ops/check.hpp"
#include "matmem/ops/dnc.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"

namespace matmem {
namespace {
template <class T, bool transposed>
struct DncDirectionalKernel {
  // Inputs: L, w.
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    if (transposed)
      for (std::int64_t k = 0; k < B * N; ++k) c.y[k] = 0;
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t b = 0; b < B; ++b) {
        const T *l = c.x[0] + (i * B + b) * N, *w = c.x[1] + b * N;
        T* y = c.y + b * N;
        if (transposed) {
          for (std::int64_t j = 0; j < N; ++j) y[j] += w[i] * l[j];
        } else {
          y[i] = ops::simd::dot(l, w, N);
        }
      }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    T *gl = c.grad_x[0], *gw = c.grad_x[1];
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t row = (i * B + b) * N;
        const T *l = c.x[0] + row, *w = c.x[1] + b * N, *g = c.grad_y + b * N;
        if (transposed) {  // along row i: L[i,·] meets g and w_i
          if (gl)
            for (std::int64_t j = 0; j < N; ++j) gl[row + j] += w[i] * g[j];
          if (gw) gw[b * N + i] += ops::simd::dot(l, g, N);
        } else {  // along row i: L[i,·] meets w and g_i
          if (gl)
            for (std::int64_t j = 0; j < N; ++j) gl[row + j] += g[i] * w[j];
          if (gw)
            for (std::int64_t j = 0; j < N; ++j) gw[b * N + j] += l[j] * g[i];
        }
      }
  }
};
template <class T>
struct DncForwardKernel : DncDirectionalKernel<T, false> {};
template <class T>
struct DncBackwardKernel : DncDirectionalKernel<T, true> {};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) { return {2.0 * x[0].numel(), 4.0 * x[0].numel()}; }
constexpr OpDef kForward = make_op<DncForwardKernel>("dnc_forward_weighting", flops);
constexpr OpDef kBackward = make_op<DncBackwardKernel>("dnc_backward_weighting", flops);

Var directional(const OpDef& op, Var link, Var w) {
  ops::same_tape(op.name, link, w);
  const Shape &ls = link.shape(), &ws = w.shape();
  if (!ops::is_weighting(ws) || ls != matrices(ws.batch, ws.cols, ws.cols))
    ops::shape_error(op.name, "wants the link matrix L:[B,N,N] and a read weighting w:[B,N]", link, w);
  return w.tape->apply(op, {link, w}, ws);
}

// Values in a DNC's ranges: L in [0, 1) with a zero diagonal (as dnc_link makes it), w in [0, 2/N).
OpSample directional_sample(Rng& rng, SampleSize s, Var (*op)(Var, Var)) {
  const SampleDims d = sample_dims(s);
  Tensor link = random_tensor(rng, matrices(d.batch, d.slots, d.slots), 0.0, 1.0);
  for (std::int64_t b = 0; b < d.batch; ++b)
    for (std::int64_t i = 0; i < d.slots; ++i) link.set(link.shape().offset(b, 0, i, i), 0.0);
  OpSample sample;
  sample.inputs = {{"L", std::move(link)}, {"w_read_prev", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 2.0 / double(d.slots))}};
  sample.apply = [op](Tape&, std::span<const Var> x) { return op(x[0], x[1]); };
  return sample;
}
}  // namespace

Var dnc_forward_weighting(Var link, Var read_weight_prev) { return directional(kForward, link, read_weight_prev); }
Var dnc_backward_weighting(Var link, Var read_weight_prev) { return directional(kBackward, link, read_weight_prev); }

OpEntry dnc_forward_weighting_entry() {
  return {"dnc_forward_weighting", [](Rng& rng, SampleSize s) { return directional_sample(rng, s, &dnc_forward_weighting); }};
}
OpEntry dnc_backward_weighting_entry() {
  return {"dnc_backward_weighting", [](Rng& rng, SampleSize s) { return directional_sample(rng, s, &dnc_backward_weighting); }};
}

}  // namespace matmem
