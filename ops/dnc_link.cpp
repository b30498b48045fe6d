// dnc_link and dnc_precedence: the DNC's temporal links after a write (spec/dnc.md §6; [N] and [D]
// `addressing.py::TemporalLinkage` agree), w = w^w_t the write weighting, p = p_{t−1}, L = L_{t−1}:
//   dnc_link:        y[i,j] = (1 − w_i − w_j) L[i,j] + w_i p_j  for i ≠ j,  y[i,i] = 0
//                    L:[B,N,N], p, w:[B,N] -> L_t [B,N,N]; O(N²) per sample (time and the output's memory)
//   dnc_precedence:  y = (1 − Σ_k w_k) p + w.   p, w:[B,N] -> p_t [B,N]
// Both read p_{t−1}: the link is updated before the precedence (dnc_temporal_links in ops/dnc.hpp keeps the
// order). L's diagonal is never read (an input's diagonal gets no gradient). With g the upstream gradient:
//   link, i ≠ j:  grad_L[i,j] += g[i,j] (1 − w_i − w_j),  grad_p_j += g[i,j] w_i,
//                 grad_w_i += g[i,j] (p_j − L[i,j]),  grad_w_j −= g[i,j] L[i,j]
//   precedence:   grad_p += g (1 − Σ_k w_k),  grad_w_k += g_k − Σ_n g_n p_n
// Layout: L is a batch of N×N matrices, row i of sample b contiguous at (i·B + b)·N; weightings are
// row-major [B,1,N], sample b's slots at b·N. No saved or scratch. Backward runs each row's two
// off-diagonal ranges as branch-free loops, its sums through ops::simd::dot: forward and backward 0.21 ms at
// B 16, N 120 (`matmem bench ops --op dnc_link`), against 0.59 ms with a test on j == i in one scalar loop.
#include "matmem/ops/check.hpp"
#include "matmem/ops/dnc.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"

namespace matmem {
namespace {
template <class T>
struct DncLinkKernel {
  // Inputs: L_{t−1}, p_{t−1}, w.
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t b = 0; b < B; ++b) {
        const T *l = c.x[0] + (i * B + b) * N, *p = c.x[1] + b * N, *w = c.x[2] + b * N;
        T* y = c.y + (i * B + b) * N;
        const T wi = w[i];
        for (std::int64_t j = 0; j < N; ++j) y[j] = (T(1) - wi - w[j]) * l[j] + wi * p[j];
        y[i] = 0;
      }
  }
  // f(j0, j1) over the columns of row i off the diagonal: [0, i) and [i + 1, N), each a branch-free loop.
  template <class F>
  static void off_diagonal(std::int64_t i, std::int64_t N, F&& f) {
    f(std::int64_t(0), i);
    f(i + 1, N);
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    T *gl = c.grad_x[0], *gp = c.grad_x[1], *gw = c.grad_x[2];
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t row = (i * B + b) * N;
        const T *l = c.x[0] + row, *p = c.x[1] + b * N, *w = c.x[2] + b * N, *g = c.grad_y + row;
        const T wi = w[i];
        if (gl)
          off_diagonal(i, N, [&](std::int64_t j0, std::int64_t j1) {
            T* gr = gl + row;
            for (std::int64_t j = j0; j < j1; ++j) gr[j] += g[j] * (T(1) - wi - w[j]);
          });
        if (gp)
          off_diagonal(i, N, [&](std::int64_t j0, std::int64_t j1) {
            T* gr = gp + b * N;
            for (std::int64_t j = j0; j < j1; ++j) gr[j] += g[j] * wi;
          });
        if (gw) {
          T gwi = 0;
          off_diagonal(i, N, [&](std::int64_t j0, std::int64_t j1) {
            T* gr = gw + b * N;
            gwi += ops::simd::dot(g + j0, p + j0, j1 - j0) - ops::simd::dot(g + j0, l + j0, j1 - j0);
            for (std::int64_t j = j0; j < j1; ++j) gr[j] -= g[j] * l[j];
          });
          gw[b * N + i] += gwi;
        }
      }
  }
};

template <class T>
struct DncPrecedenceKernel {
  // Inputs: p_{t−1}, w.
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    for (std::int64_t b = 0; b < B; ++b) {
      const T *p = c.x[0] + b * N, *w = c.x[1] + b * N;
      T written = 0;
      for (std::int64_t n = 0; n < N; ++n) written += w[n];
      for (std::int64_t n = 0; n < N; ++n) c.y[b * N + n] = (T(1) - written) * p[n] + w[n];
    }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols;
    T *gp = c.grad_x[0], *gw = c.grad_x[1];
    for (std::int64_t b = 0; b < B; ++b) {
      const T *p = c.x[0] + b * N, *w = c.x[1] + b * N, *g = c.grad_y + b * N;
      T written = 0, gdotp = 0;
      for (std::int64_t n = 0; n < N; ++n) written += w[n], gdotp += g[n] * p[n];
      for (std::int64_t n = 0; n < N; ++n) {
        if (gp) gp[b * N + n] += g[n] * (T(1) - written);
        if (gw) gw[b * N + n] += g[n] - gdotp;
      }
    }
  }
};
Flops link_flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {5.0 * y.numel(), 10.0 * y.numel()}; }
Flops precedence_flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {4.0 * y.numel(), 6.0 * y.numel()}; }
constexpr OpDef kLink = make_op<DncLinkKernel>("dnc_link", link_flops);
constexpr OpDef kPrecedence = make_op<DncPrecedenceKernel>("dnc_precedence", precedence_flops);

// p_{t−1} and w: weightings of one shape [B,N].
void check_weightings(const char* op, Var p, Var w) {
  ops::same_tape(op, p, w);
  if (!ops::is_weighting(p.shape()) || p.shape() != w.shape())
    ops::shape_error(op, "precedence_prev and w_write must both be weightings [B,N]", p, w);
}
}  // namespace

Var dnc_link(Var link_prev, Var precedence_prev, Var w_write) {
  check_weightings("dnc_link", precedence_prev, w_write);
  ops::same_tape("dnc_link", link_prev, w_write);
  const Shape &ls = link_prev.shape(), &ws = w_write.shape();
  if (ls != matrices(ws.batch, ws.cols, ws.cols))
    ops::shape_error("dnc_link", "link_prev must be [B,N,N] for a write weighting [B,N]", link_prev, w_write);
  return w_write.tape->apply(kLink, {link_prev, precedence_prev, w_write}, ls);
}

Var dnc_precedence(Var precedence_prev, Var w_write) {
  check_weightings("dnc_precedence", precedence_prev, w_write);
  return w_write.tape->apply(kPrecedence, {precedence_prev, w_write}, w_write.shape());
}

// Values in a DNC's ranges: L in [0, 1) (its diagonal too, which the op must ignore), p and w in [0, 2/N)
// (sums near 1, as softmax-like weightings).
OpEntry dnc_link_entry() {
  return {"dnc_link", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            const double top = 2.0 / double(d.slots);
            OpSample sample;
            sample.inputs = {{"L_prev", random_tensor(rng, matrices(d.batch, d.slots, d.slots), 0.0, 1.0)},
                             {"p_prev", random_tensor(rng, weighting(d.batch, d.slots), 0.0, top)},
                             {"w", random_tensor(rng, weighting(d.batch, d.slots), 0.0, top)}};
            sample.apply = [](Tape&, std::span<const Var> x) { return dnc_link(x[0], x[1], x[2]); };
            return sample;
          }};
}

OpEntry dnc_precedence_entry() {
  return {"dnc_precedence", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            const double top = 2.0 / double(d.slots);
            OpSample sample;
            sample.inputs = {{"p_prev", random_tensor(rng, weighting(d.batch, d.slots), 0.0, top)},
                             {"w", random_tensor(rng, weighting(d.batch, d.slots), 0.0, top)}};
            sample.apply = [](Tape&, std::span<const Var> x) { return dnc_precedence(x[0], x[1]); };
            return sample;
          }};
}

}  // namespace matmem
