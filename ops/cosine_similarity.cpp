// cosine_similarity: y_{h,b,n} = d / (‖K_{h,b}‖ ‖M_{b,n}‖ + ε), d = <K_{h,b}, M_{b,n}>_F, ε = 1e-8,
// for H keys against one memory in a single pass over it (the NTM's heads all address M_{t−1}).
//   K_1..K_H:[B,r,c], M:[B,N,r,c] -> [B,H,N]  (row h is head h's similarities; H = 1 gives [B,N])
// With D = ‖K_h‖‖M_n‖ + ε:
//   grad_K_h += Σ_n g_{h,n} (M_n / D - d ‖M_n‖ / D² · K_h / ‖K_h‖)
//   grad_M_n += Σ_h g_{h,n} (K_h / D - d ‖K_h‖ / D² · M_n / ‖M_n‖)
// At a zero norm the K/‖K‖ (or M_n/‖M_n‖) term is taken as 0 (its subgradient), so nothing divides by zero.
// ‖M_n‖ is computed once for all heads, and backward updates grad_M in one pass for all heads.
#include <array>
#include <cmath>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-8;
constexpr std::size_t kMaxKeys = 16;

// saved layout (H keys, BC = B·c): dot [H·B·N], ‖M‖ [B·N], ‖K‖ [H·B], then scratch:
// ea [H·N·BC] (g/D expanded over slot rows), ecm [N·BC] (Σ_h g d ‖K‖/(D² ‖M‖), expanded),
// kcoef [H·BC], acc_d [H·BC], acc_m [BC].
std::int64_t saved_size(std::int64_t H, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, BC = B * m.cols;
  return H * B * N + B * N + H * B + H * N * BC + N * BC + 3 * H * BC + BC;
}

template <class T>
struct CosineSimilarityKernel {
  static void forward(const OpCall<T>& c) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T* mem = c.x[H];
    T *dot = c.saved, *nm = dot + H * B * N, *nk = nm + B * N;
    T* acc_d = nk + H * B + H * N * BC + N * BC + H * BC;
    T* acc_m = acc_d + H * BC;
    std::fill(dot, dot + H * B * N + B * N, T(0));
    for (std::int64_t n = 0; n < N; ++n) {
      std::fill(acc_d, acc_d + H * BC + BC, T(0));
      for (std::int64_t i = 0; i < R; ++i) {
        const T* mr = mem + (n * R + i) * BC;
#pragma GCC ivdep
        for (std::int64_t q = 0; q < BC; ++q) acc_m[q] += mr[q] * mr[q];
        for (int h = 0; h < H; ++h) {
          const T* kr = c.x[h] + i * BC;
          T* ad = acc_d + h * BC;
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) ad[q] += kr[q] * mr[q];
        }
      }
      ops::reduce_to_slot(acc_m, B, N, C, n, nm);
      for (int h = 0; h < H; ++h) ops::reduce_to_slot(acc_d + h * BC, B, N, C, n, dot + h * B * N);
    }
    std::fill(nk, nk + H * B, T(0));
    for (int h = 0; h < H; ++h) {
      std::fill(acc_d, acc_d + BC, T(0));
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t q = 0; q < BC; ++q) acc_d[q] += c.x[h][i * BC + q] * c.x[h][i * BC + q];
      ops::reduce_to_slot(acc_d, B, 1, C, 0, nk + h * B);
    }
    for (std::int64_t q = 0; q < H * B; ++q) nk[q] = std::sqrt(nk[q]);
    for (std::int64_t q = 0; q < B * N; ++q) nm[q] = std::sqrt(nm[q]);
    for (int h = 0; h < H; ++h)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t n = 0; n < N; ++n) {
          const std::int64_t o = (h * B + b) * N + n;
          c.y[o] = dot[o] / (nk[h * B + b] * nm[b * N + n] + T(kEps));
        }
  }

  static void backward(const OpCall<T>& c) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T* mem = c.x[H];
    T* gm = c.grad_x[H];
    const T *dot = c.saved, *nm = dot + H * B * N, *nk = nm + B * N;
    T* ea = c.saved + H * B * N + B * N + H * B;
    T* ecm = ea + H * N * BC;
    T* kcoef = ecm + N * BC;
    std::fill(ecm, ecm + N * BC, T(0));
    for (int h = 0; h < H; ++h)
      for (std::int64_t b = 0; b < B; ++b) {
        const T kn = nk[h * B + b];
        T kc = 0;
        for (std::int64_t n = 0; n < N; ++n) {
          const std::int64_t o = (h * B + b) * N + n, q = b * N + n;
          const T den = kn * nm[q] + T(kEps), g = c.grad_y[o];
          const T a = g / den;
          const T cm = nm[q] > 0 ? g * dot[o] * kn / (den * den * nm[q]) : T(0);
          kc += kn > 0 ? g * dot[o] * nm[q] / (den * den * kn) : T(0);
          T *ear = ea + (h * N + n) * BC + b * C, *ecr = ecm + n * BC + b * C;
          for (std::int64_t j = 0; j < C; ++j) {
            ear[j] = a;
            ecr[j] += cm;
          }
        }
        for (std::int64_t j = 0; j < C; ++j) kcoef[h * BC + b * C + j] = kc;
      }
    for (std::int64_t n = 0; n < N; ++n) {
      const T* cn = ecm + n * BC;
      for (std::int64_t i = 0; i < R; ++i) {
        const std::int64_t off = (n * R + i) * BC;
        const T* mr = mem + off;
        if (gm) {
          T* gmr = gm + off;
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) gmr[q] -= cn[q] * mr[q];
        }
        for (int h = 0; h < H; ++h) {
          const T *an = ea + (h * N + n) * BC, *kr = c.x[h] + i * BC;
          if (gm) {
            T* gmr = gm + off;
#pragma GCC ivdep
            for (std::int64_t q = 0; q < BC; ++q) gmr[q] += an[q] * kr[q];
          }
          if (T* gk = c.grad_x[h]) {
            T* gkr = gk + i * BC;
#pragma GCC ivdep
            for (std::int64_t q = 0; q < BC; ++q) gkr[q] += an[q] * mr[q];
          }
        }
      }
    }
    for (int h = 0; h < H; ++h)
      if (T* gk = c.grad_x[h])
        for (std::int64_t i = 0; i < R; ++i)
          for (std::int64_t q = 0; q < BC; ++q) gk[i * BC + q] -= kcoef[h * BC + q] * c.x[h][i * BC + q];
  }
};

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs&) {
  const double mem = double(x[arity - 1].numel()), heads = double(arity - 1);
  return {(2.0 * heads + 2.0) * mem, (4.0 * heads + 2.0) * mem};
}
constexpr OpDef kOp = make_op<CosineSimilarityKernel>("cosine_similarity", flops);
}  // namespace

Var cosine_similarity(std::span<const Var> keys, Var memory) {
  const char* op = "cosine_similarity";
  if (keys.empty() || keys.size() > kMaxKeys)
    throw Error(fmt::format("{}: between 1 and {} keys, got {}", op, kMaxKeys, keys.size()));
  std::array<Var, kMaxKeys + 1> in;
  const Shape& m = memory.shape();
  for (std::size_t h = 0; h < keys.size(); ++h) {
    ops::same_tape(op, keys[h], memory);
    const Shape& k = keys[h].shape();
    if (k.slots != 1 || k.batch != m.batch || k.rows != m.rows || k.cols != m.cols)
      ops::shape_error(op, "each key must be [B,r,c] and memory [B,N,r,c] with the same B, r, c", keys[h], memory);
    in[h] = keys[h];
  }
  in[keys.size()] = memory;
  const auto H = std::int64_t(keys.size());
  return memory.tape->apply(kOp, std::span<const Var>(in.data(), keys.size() + 1),
                            {m.batch, 1, H, m.slots}, {}, saved_size(H, m));
}

Var cosine_similarity(Var key, Var memory) { return cosine_similarity(std::span<const Var>(&key, 1), memory); }

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
