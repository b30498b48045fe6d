// cosine_similarity: y_{h,b,n} = d / (‖K_{h,b}‖ ‖M_{b,n}‖ + ε), d = <K_{h,b}, M_{b,n}>_F, ε = 1e-8,
// for H keys against one memory in a single pass over it (the NTM's heads all address M_{t−1}).
//   K_1..K_H:[B,r,c], M:[B,N,r,c] -> [B,H,N]  (row h is head h's similarities; H = 1 gives [B,N])
// With D = ‖K_h‖‖M_n‖ + ε:
//   grad_K_h += Σ_n g_{h,n} (M_n / D - d ‖M_n‖ / D² · K_h / ‖K_h‖)
//   grad_M_n += Σ_h g_{h,n} (K_h / D - d ‖K_h‖ / D² · M_n / ‖M_n‖)
// At a zero norm the K/‖K‖ (or M_n/‖M_n‖) term is taken as 0 (its subgradient), so nothing divides by zero.
// ‖M_n‖ is computed once for all heads, and backward updates grad_M in one pass for all heads.
#include <algorithm>
#include <array>
#include <cmath>

#include <xsimd/xsimd.hpp>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/simd.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
constexpr double kEps = 1e-8;
constexpr std::size_t kMaxKeys = 16;

// saved: dot [H·B·N], ‖M‖ [B·N], ‖K‖ [H·B].
// scratch, forward: every slot's column sums [N·(H+1)·BC] then their per-(b) totals [N·(H+1)·B];
// backward: a = g/D [H·B·N], cm = Σ_h g d ‖K‖/(D² ‖M‖) [B·N], kc [H·B], one slot's a and cm expanded
// over c [(H+1)·BC], and one row of kc terms [N]. Nothing kept per node scales with the memory, and each
// pass streams M (and grad_M) once.
std::int64_t saved_size(std::int64_t H, const Shape& m) {
  return H * m.batch * m.slots + m.batch * m.slots + H * m.batch;
}
std::int64_t scratch_size(std::int64_t H, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, BC = B * m.cols;
  return std::max(N * (H + 1) * (BC + B), H * B * N + B * N + H * B + (H + 1) * BC + N);
}

template <class T>
struct CosineSimilarityKernel {
  using V = xsimd::batch<T>;
  static constexpr std::int64_t W = V::size;

  // Columns q .. q + NC·W of one slot's R rows (each B·c long): sums[q] = Σ_i M² (if norms) and
  // sums[(h + norms)·BC + q] = Σ_i K_h M for H keys, NC·(H + 1) independent FMA chains in registers.
  template <int NC, int H>
  static void chunk_sums(const T* slot, const T* const* keys, std::int64_t R, std::int64_t BC, std::int64_t q,
                         T* sums, bool norms) {
    V am[NC], ad[H][NC];
    for (int u = 0; u < NC; ++u) {
      am[u] = V(T(0));
      for (int h = 0; h < H; ++h) ad[h][u] = V(T(0));
    }
    for (std::int64_t i = 0; i < R; ++i) {
      for (int u = 0; u < NC; ++u) {
        const V mv = V::load_unaligned(slot + i * BC + q + u * W);
        if (norms) am[u] = xsimd::fma(mv, mv, am[u]);
        for (int h = 0; h < H; ++h)
          ad[h][u] = xsimd::fma(V::load_unaligned(keys[h] + i * BC + q + u * W), mv, ad[h][u]);
      }
    }
    const int o = norms ? 1 : 0;
    for (int u = 0; u < NC; ++u) {
      if (norms) am[u].store_unaligned(sums + q + u * W);
      for (int h = 0; h < H; ++h) ad[h][u].store_unaligned(sums + (h + o) * BC + q + u * W);
    }
  }

  // Every column of one slot: two SIMD chunks at a time (so the FMA latency is hidden), then one, then the
  // scalar tail. K ≥ 1 keys fixed at compile time, or K = 0 for one key given at run time.
  template <int K>
  static void slot_sums(const T* slot, const T* const* keys, std::int64_t R, std::int64_t BC, T* sums, bool norms) {
    constexpr int H = K == 0 ? 1 : K;
    std::int64_t q = 0;
    for (; q + 2 * W <= BC; q += 2 * W) chunk_sums<2, H>(slot, keys, R, BC, q, sums, norms);
    for (; q + W <= BC; q += W) chunk_sums<1, H>(slot, keys, R, BC, q, sums, norms);
    const int o = norms ? 1 : 0;
    for (; q < BC; ++q) {
      T am = 0;
      for (std::int64_t i = 0; i < R; ++i) am += slot[i * BC + q] * slot[i * BC + q];
      if (norms) sums[q] = am;
      for (int h = 0; h < H; ++h) {
        T ad = 0;
        for (std::int64_t i = 0; i < R; ++i) ad += keys[h][i * BC + q] * slot[i * BC + q];
        sums[(h + o) * BC + q] = ad;
      }
    }
  }

  static void forward(const OpCall<T>& c) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T* mem = c.x[H];
    T *dot = c.saved, *nm = dot + H * B * N, *nk = nm + B * N;
    T* sums = c.scratch;                        // slot n's sums at n·(H+1)·BC: [Σ M² | Σ K_1 M | …]
    T* totals = c.scratch + N * (H + 1) * BC;   // group (n·(H+1) + k)·B + b
    for (std::int64_t n = 0; n < N; ++n) {
      const T* slot = mem + n * R * BC;
      T* out = sums + n * (H + 1) * BC;
      // Per column q of the slot's rows: Σ_i M², and Σ_i K_h M per head, accumulated in registers.
      switch (H) {
        case 1: slot_sums<1>(slot, c.x, R, BC, out, true); break;
        case 2: slot_sums<2>(slot, c.x, R, BC, out, true); break;
        case 3: slot_sums<3>(slot, c.x, R, BC, out, true); break;
        case 4: slot_sums<4>(slot, c.x, R, BC, out, true); break;
        default:  // more keys: the norms, then one key at a time
          for (std::int64_t q = 0; q < BC; ++q) {
            T am = 0;
            for (std::int64_t i = 0; i < R; ++i) am += slot[i * BC + q] * slot[i * BC + q];
            out[q] = am;
          }
          for (int h = 0; h < H; ++h) slot_sums<0>(slot, c.x + h, R, BC, out + (h + 1) * BC, false);
      }
    }
    // Σ over each item's c columns, for all slots and quantities in one flat loop, then into [B,N] order.
    ops::run_sums(sums, N * (H + 1) * B, C, totals);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t b = 0; b < B; ++b) {
        nm[b * N + n] = totals[(n * (H + 1)) * B + b];
        for (int h = 0; h < H; ++h) dot[(h * B + b) * N + n] = totals[(n * (H + 1) + 1 + h) * B + b];
      }
    std::fill_n(nk, H * B, T(0));
    for (int h = 0; h < H; ++h) {
      std::fill_n(sums, BC, T(0));  // (scratch reused)
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t q = 0; q < BC; ++q) sums[q] += c.x[h][i * BC + q] * c.x[h][i * BC + q];
      ops::reduce_to_slot(sums, B, 1, C, 0, nk + h * B, totals);
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
    T* a = c.scratch;
    T* cm = a + H * B * N;
    T* kc = cm + B * N;
    T* ea = kc + H * B;  // a_h expanded over c [H·BC], then cm expanded [BC]
    T* ecm = ea + H * BC;
    T* kt = ecm + BC;    // one row's kc terms [N]
    // Per (h, b, n): a = g/D, and the norm terms' coefficients (branch-free loops over n, so they vectorise).
    std::fill_n(cm, B * N, T(0));
    for (int h = 0; h < H; ++h)
      for (std::int64_t b = 0; b < B; ++b) {
        const T kn = nk[h * B + b], inv_kn = kn > 0 ? T(1) / kn : T(0);
        const T *gy = c.grad_y + (h * B + b) * N, *d = dot + (h * B + b) * N, *mn = nm + b * N;
        T *ar = a + (h * B + b) * N, *cmr = cm + b * N;
#pragma GCC ivdep
        for (std::int64_t n = 0; n < N; ++n) {
          const T den = kn * mn[n] + T(kEps);
          const T t = gy[n] * d[n] / (den * den);
          ar[n] = gy[n] / den;
          cmr[n] += mn[n] > 0 ? t * kn / mn[n] : T(0);
          kt[n] = t * mn[n] * inv_kn;
        }
        kc[h * B + b] = ops::simd::sum(kt, N);
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
            if (T* gk = c.grad_x[h]) {
              T* gr = gk + i * BC + q;
              xsimd::fma(av, mv, V::load_unaligned(gr)).store_unaligned(gr);
            }
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
                            {m.batch, 1, H, m.slots}, {}, saved_size(H, m), scratch_size(H, m));
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
