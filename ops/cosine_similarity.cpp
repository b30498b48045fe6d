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

#include <xsimd/xsimd.hpp>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-8;
constexpr std::size_t kMaxKeys = 16;

// saved: dot [H·B·N], ‖M‖ [B·N], ‖K‖ [H·B]; then backward scratch: a = g/D [H·B·N], cm = Σ_h g d ‖K‖/(D² ‖M‖)
// [B·N], kc [H·B]; and per-slot rows of B·c: partial sums [(H+1)·BC], a and cm expanded over c [(H+1)·BC].
// Nothing scales with N·r·c except the memory itself: every pass streams M (and grad_M) once.
std::int64_t saved_size(std::int64_t H, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, BC = B * m.cols;
  return 2 * (H * B * N + B * N + H * B) + 2 * (H + 1) * BC;
}

template <class T>
struct CosineSimilarityKernel {
  using V = xsimd::batch<T>;
  static constexpr std::int64_t W = V::size;

  static void forward(const OpCall<T>& c) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T* mem = c.x[H];
    T *dot = c.saved, *nm = dot + H * B * N, *nk = nm + B * N;
    T* sums = c.saved + 2 * (H * B * N + B * N + H * B);  // [sm | sd_1 .. sd_H], each BC
    std::fill(dot, dot + H * B * N + B * N + H * B, T(0));
    for (std::int64_t n = 0; n < N; ++n) {
      const T* slot = mem + n * R * BC;
      // Per column q of the slot's rows: Σ_i M², and Σ_i K_h M per head, accumulated in registers.
      std::int64_t q = 0;
      for (; q + W <= BC; q += W) {
        V am(T(0));
        for (std::int64_t i = 0; i < R; ++i) {
          const V mv = V::load_unaligned(slot + i * BC + q);
          am = xsimd::fma(mv, mv, am);
        }
        am.store_unaligned(sums + q);
        for (int h = 0; h < H; ++h) {
          V ad(T(0));
          for (std::int64_t i = 0; i < R; ++i)
            ad = xsimd::fma(V::load_unaligned(c.x[h] + i * BC + q), V::load_unaligned(slot + i * BC + q), ad);
          ad.store_unaligned(sums + (h + 1) * BC + q);
        }
      }
      for (; q < BC; ++q) {
        T am = 0;
        for (std::int64_t i = 0; i < R; ++i) am += slot[i * BC + q] * slot[i * BC + q];
        sums[q] = am;
        for (int h = 0; h < H; ++h) {
          T ad = 0;
          for (std::int64_t i = 0; i < R; ++i) ad += c.x[h][i * BC + q] * slot[i * BC + q];
          sums[(h + 1) * BC + q] = ad;
        }
      }
      ops::reduce_to_slot(sums, B, N, C, n, nm);
      for (int h = 0; h < H; ++h) ops::reduce_to_slot(sums + (h + 1) * BC, B, N, C, n, dot + h * B * N);
    }
    for (int h = 0; h < H; ++h) {
      std::fill_n(sums, BC, T(0));
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t q = 0; q < BC; ++q) sums[q] += c.x[h][i * BC + q] * c.x[h][i * BC + q];
      ops::reduce_to_slot(sums, B, 1, C, 0, nk + h * B);
    }
    for (std::int64_t q = 0; q < H * B; ++q) nk[q] = std::sqrt(nk[q]);
    for (std::int64_t q = 0; q < B * N; ++q) nm[q] = std::sqrt(nm[q]);
    for (int h = 0; h < H; ++h)
      for (std::int64_t b = 0; b < B; ++b) {
        const T kn = nk[h * B + b];
        const T *d = dot + (h * B + b) * N, *mn = nm + b * N;
        T* y = c.y + (h * B + b) * N;
#pragma GCC ivdep
        for (std::int64_t n = 0; n < N; ++n) y[n] = d[n] / (kn * mn[n] + T(kEps));
      }
  }

  static void backward(const OpCall<T>& c) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T* mem = c.x[H];
    T* gm = c.grad_x[H];
    const T *dot = c.saved, *nm = dot + H * B * N, *nk = nm + B * N;
    T* a = c.saved + H * B * N + B * N + H * B;
    T* cm = a + H * B * N;
    T* kc = cm + B * N;
    T* ea = kc + H * B;  // a_h expanded over c [H·BC], then cm expanded [BC]
    T* ecm = ea + H * BC;
    // Per (h, b, n): a = g/D, and the norm terms' coefficients.
    std::fill_n(cm, B * N, T(0));
    for (int h = 0; h < H; ++h)
      for (std::int64_t b = 0; b < B; ++b) {
        const T kn = nk[h * B + b];
        T kcs = 0;
        for (std::int64_t n = 0; n < N; ++n) {
          const std::int64_t o = (h * B + b) * N + n, q = b * N + n;
          const T den = kn * nm[q] + T(kEps), g = c.grad_y[o];
          a[o] = g / den;
          if (nm[q] > 0) cm[q] += g * dot[o] * kn / (den * den * nm[q]);
          if (kn > 0) kcs += g * dot[o] * nm[q] / (den * den * kn);
        }
        kc[h * B + b] = kcs;
      }
    for (std::int64_t n = 0; n < N; ++n) {
      const T* slot = mem + n * R * BC;
      T* gslot = gm ? gm + n * R * BC : nullptr;
      for (int h = 0; h < H; ++h) ops::expand_slot(a + h * B * N, B, N, C, n, ea + h * BC);
      ops::expand_slot(cm, B, N, C, n, ecm);
      std::int64_t q = 0;
      for (; q + W <= BC; q += W) {
        const V e = V::load_unaligned(ecm + q);
        for (std::int64_t i = 0; i < R; ++i) {
          const V mv = V::load_unaligned(slot + i * BC + q);
          V g = gslot ? V::load_unaligned(gslot + i * BC + q) - e * mv : V(T(0));
          for (int h = 0; h < H; ++h) {
            const V av = V::load_unaligned(ea + h * BC + q);
            if (gslot) g = xsimd::fma(av, V::load_unaligned(c.x[h] + i * BC + q), g);
            if (T* gk = c.grad_x[h]) xsimd::fma(av, mv, V::load_unaligned(gk + i * BC + q)).store_unaligned(gk + i * BC + q);
          }
          if (gslot) g.store_unaligned(gslot + i * BC + q);
        }
      }
      for (; q < BC; ++q)
        for (std::int64_t i = 0; i < R; ++i) {
          const T mv = slot[i * BC + q];
          if (gslot) gslot[i * BC + q] -= ecm[q] * mv;
          for (int h = 0; h < H; ++h) {
            if (gslot) gslot[i * BC + q] += ea[h * BC + q] * c.x[h][i * BC + q];
            if (T* gk = c.grad_x[h]) gk[i * BC + q] += ea[h * BC + q] * mv;
          }
        }
    }
    for (int h = 0; h < H; ++h)
      if (T* gk = c.grad_x[h]) {
        ops::expand_slot(kc + h * B, B, 1, C, 0, ea);
        for (std::int64_t i = 0; i < R; ++i)
          for (std::int64_t q = 0; q < BC; ++q) gk[i * BC + q] -= ea[q] * c.x[h][i * BC + q];
      }
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
