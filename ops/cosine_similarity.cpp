// cosine_similarity: y_{b,n} = d / (‖K_b‖ ‖M_{b,n}‖ + ε), d = <K_b, M_{b,n}>_F, ε = 1e-8.
//   K:[B,r,c], M:[B,N,r,c] -> [B,N]   (NTM content addressing, Frobenius inner product)
// With D = ‖K‖‖M_n‖ + ε:
//   grad_K   += Σ_n g_n (M_n / D - d ‖M_n‖ / D² · K / ‖K‖)
//   grad_M_n += g_n (K / D - d ‖K‖ / D² · M_n / ‖M_n‖)
// At a zero norm the K/‖K‖ (or M_n/‖M_n‖) term is taken as 0 (its subgradient), so nothing divides by zero.
// Saved: d [B,N], ‖M‖ [B,N], ‖K‖ [B].
#include <cmath>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-8;

template <class T>
struct Kernel {
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[1];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols;
    const T *k = c.x[0], *mem = c.x[1];
    T *dot = c.saved, *nm = dot + B * N, *nk = nm + B * N;
    std::fill(c.saved, c.saved + 2 * B * N + B, T(0));
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t b = 0; b < B; ++b) {
          const T* kr = k + (i * B + b) * C;
          const T* mr = mem + ((n * R + i) * B + b) * C;
          T d = 0, s = 0;
          for (std::int64_t j = 0; j < C; ++j) {
            d += kr[j] * mr[j];
            s += mr[j] * mr[j];
          }
          dot[b * N + n] += d;
          nm[b * N + n] += s;
        }
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < C; ++j) nk[b] += k[(i * B + b) * C + j] * k[(i * B + b) * C + j];
    for (std::int64_t b = 0; b < B; ++b) nk[b] = std::sqrt(nk[b]);
    for (std::int64_t q = 0; q < B * N; ++q) nm[q] = std::sqrt(nm[q]);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t n = 0; n < N; ++n) c.y[b * N + n] = dot[b * N + n] / (nk[b] * nm[b * N + n] + T(kEps));
  }

  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[1];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols;
    const T *k = c.x[0], *mem = c.x[1];
    T *gk = c.grad_x[0], *gm = c.grad_x[1];
    const T *dot = c.saved, *nm = dot + B * N, *nk = nm + B * N;
    for (std::int64_t b = 0; b < B; ++b) {
      T k_coef = 0;  // Σ_n of the coefficient of K in grad_K
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t q = b * N + n;
        const T den = nk[b] * nm[q] + T(kEps), g = c.grad_y[q];
        const T a = g / den;                                   // coefficient of M_n in grad_K, of K in grad_M_n
        const T ck = nk[b] > 0 ? g * dot[q] * nm[q] / (den * den * nk[b]) : T(0);
        const T cm = nm[q] > 0 ? g * dot[q] * nk[b] / (den * den * nm[q]) : T(0);
        k_coef += ck;
        for (std::int64_t i = 0; i < R; ++i) {
          const T* kr = k + (i * B + b) * C;
          const T* mr = mem + ((n * R + i) * B + b) * C;
          if (gk) {
            T* gr = gk + (i * B + b) * C;
            for (std::int64_t j = 0; j < C; ++j) gr[j] += a * mr[j];
          }
          if (gm) {
            T* gr = gm + ((n * R + i) * B + b) * C;
            for (std::int64_t j = 0; j < C; ++j) gr[j] += a * kr[j] - cm * mr[j];
          }
        }
      }
      if (gk)
        for (std::int64_t i = 0; i < R; ++i)
          for (std::int64_t j = 0; j < C; ++j) gk[(i * B + b) * C + j] -= k_coef * k[(i * B + b) * C + j];
    }
  }
};

Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double mem = double(x[1].numel());
  return {4.0 * mem, 6.0 * mem};
}
constexpr OpDef kOp = make_op<Kernel>("cosine_similarity", flops);
}  // namespace

Var cosine_similarity(Var key, Var memory) {
  ops::same_tape("cosine_similarity", key, memory);
  const Shape &k = key.shape(), &m = memory.shape();
  if (k.slots != 1 || k.batch != m.batch || k.rows != m.rows || k.cols != m.cols)
    ops::shape_error("cosine_similarity", "key must be [B,r,c] and memory [B,N,r,c] with the same B, r, c", key, memory);
  return key.tape->apply(kOp, {key, memory}, weighting(m.batch, m.slots), {}, 2 * m.batch * m.slots + m.batch);
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
