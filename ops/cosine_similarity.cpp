// cosine_similarity: y_{b,n} = d / (‖K_b‖ ‖M_{b,n}‖ + ε), d = <K_b, M_{b,n}>_F, ε = 1e-8.
//   K:[B,r,c], M:[B,N,r,c] -> [B,N]   (NTM content addressing, Frobenius inner product)
// With D = ‖K‖‖M_n‖ + ε:
//   grad_K   += Σ_n g_n (M_n / D - d ‖M_n‖ / D² · K / ‖K‖)
//   grad_M_n += g_n (K / D - d ‖K‖ / D² · M_n / ‖M_n‖)
// At a zero norm the K/‖K‖ (or M_n/‖M_n‖) term is taken as 0 (its subgradient), so nothing divides by zero.
#include <cmath>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-8;

// saved layout: dot [B·N], ‖M‖ [B·N], ‖K‖ [B], then scratch: two slot-expanded coefficient arrays
// (N × B·c each) and two runs of B·c partial sums.
template <class T>
struct CosineSimilarityKernel {
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[1];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T *k = c.x[0], *mem = c.x[1];
    T *dot = c.saved, *nm = dot + B * N, *nk = nm + B * N;
    T* acc_d = nk + B + 2 * N * BC;
    T* acc_m = acc_d + BC;
    std::fill(dot, dot + 2 * B * N, T(0));
    for (std::int64_t n = 0; n < N; ++n) {
      std::fill(acc_d, acc_d + 2 * BC, T(0));
      for (std::int64_t i = 0; i < R; ++i) {
        const T *kr = k + i * BC, *mr = mem + (n * R + i) * BC;
#pragma GCC ivdep
        for (std::int64_t q = 0; q < BC; ++q) {
          acc_d[q] += kr[q] * mr[q];
          acc_m[q] += mr[q] * mr[q];
        }
      }
      ops::reduce_to_slot(acc_d, B, N, C, n, dot);
      ops::reduce_to_slot(acc_m, B, N, C, n, nm);
    }
    std::fill(acc_d, acc_d + BC, T(0));
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t q = 0; q < BC; ++q) acc_d[q] += k[i * BC + q] * k[i * BC + q];
    std::fill(nk, nk + B, T(0));
    ops::reduce_to_slot(acc_d, B, 1, C, 0, nk);
    for (std::int64_t b = 0; b < B; ++b) nk[b] = std::sqrt(nk[b]);
    for (std::int64_t q = 0; q < B * N; ++q) nm[q] = std::sqrt(nm[q]);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t n = 0; n < N; ++n) c.y[b * N + n] = dot[b * N + n] / (nk[b] * nm[b * N + n] + T(kEps));
  }

  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[1];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T *k = c.x[0], *mem = c.x[1];
    T *gk = c.grad_x[0], *gm = c.grad_x[1];
    const T *dot = c.saved, *nm = dot + B * N, *nk = nm + B * N;
    T* ea = c.saved + 2 * B * N + B;  // g / D per (b, n), expanded over slots
    T* ecm = ea + N * BC;             // g d ‖K‖ / (D² ‖M_n‖), expanded
    T* kcoef = ecm + N * BC;          // Σ_n g d ‖M_n‖ / (D² ‖K‖) per b, expanded over c
    // Coefficients per (b, n), expanded over the c columns of each slot row.
    for (std::int64_t b = 0; b < B; ++b) {
      T kc = 0;
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t q = b * N + n;
        const T den = nk[b] * nm[q] + T(kEps), g = c.grad_y[q];
        const T a = g / den;
        const T cm = nm[q] > 0 ? g * dot[q] * nk[b] / (den * den * nm[q]) : T(0);
        kc += nk[b] > 0 ? g * dot[q] * nm[q] / (den * den * nk[b]) : T(0);
        for (std::int64_t j = 0; j < C; ++j) {
          ea[(n * B + b) * C + j] = a;
          ecm[(n * B + b) * C + j] = cm;
        }
      }
      for (std::int64_t j = 0; j < C; ++j) kcoef[b * C + j] = kc;
    }
    for (std::int64_t n = 0; n < N; ++n) {
      const T *an = ea + n * BC, *cn = ecm + n * BC;
      for (std::int64_t i = 0; i < R; ++i) {
        const std::int64_t off = (n * R + i) * BC;
        const T *kr = k + i * BC, *mr = mem + off;
        T *gkr = gk ? gk + i * BC : nullptr, *gmr = gm ? gm + off : nullptr;
        if (gkr && gmr) {  // one pass over the slot row for both gradients
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) {
            gkr[q] += an[q] * mr[q];
            gmr[q] += an[q] * kr[q] - cn[q] * mr[q];
          }
        } else if (gkr) {
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) gkr[q] += an[q] * mr[q];
        } else if (gmr) {
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) gmr[q] += an[q] * kr[q] - cn[q] * mr[q];
        }
      }
    }
    if (gk)
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t q = 0; q < BC; ++q) gk[i * BC + q] -= kcoef[q] * k[i * BC + q];
  }
};

Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double mem = double(x[1].numel());
  return {4.0 * mem, 6.0 * mem};
}
constexpr OpDef kOp = make_op<CosineSimilarityKernel>("cosine_similarity", flops);
}  // namespace

Var cosine_similarity(Var key, Var memory) {
  ops::same_tape("cosine_similarity", key, memory);
  const Shape &k = key.shape(), &m = memory.shape();
  if (k.slots != 1 || k.batch != m.batch || k.rows != m.rows || k.cols != m.cols)
    ops::shape_error("cosine_similarity", "key must be [B,r,c] and memory [B,N,r,c] with the same B, r, c", key, memory);
  const std::int64_t bc = m.batch * m.cols;
  return key.tape->apply(kOp, {key, memory}, weighting(m.batch, m.slots), {},
                         2 * m.batch * m.slots + m.batch + 2 * m.slots * bc + 3 * bc);
}

OpEntry cosine_similarity_entry() {
  return {"cosine_similarity", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"K", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))},
                             {"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))}};
            sample.apply = [](Tape&, std::span<const Var> x) { return cosine_similarity(x[0], x[1]); };
            return sample;
          }};
}

}  // namespace matmem
