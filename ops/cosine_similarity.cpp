// cosine_similarity: y_{h,b,n} = d / (‖K_{h,b}‖ ‖M_{b,n}‖ + ε_p), d = <K_{h,b}, M_{b,n}>_F, ‖x‖ = √(Σx² + ε_n),
// for H keys against one memory in a single pass over it (the NTM's heads all address M_{t−1}).
//   K_1..K_H:[B,r,c], M:[B,N,r,c] (N ≥ 2) -> [B,H,N]  (row h is head h's similarities; H = 1 gives [B,N])
// ε_p = CosineEps::product (attrs.f[0]; 1e-8 by default), ε_n = CosineEps::norm (attrs.f[1]; 0 by default:
// the exact norms). With D = ‖K_h‖‖M_n‖ + ε_p, and ∂‖x‖/∂x = x/‖x‖ for either ε_n:
//   grad_K_h += Σ_n g_{h,n} (M_n / D - d ‖M_n‖ / D² · K_h / ‖K_h‖)
//   grad_M_n += Σ_h g_{h,n} (K_h / D - d ‖K_h‖ / D² · M_n / ‖M_n‖)
// At a zero norm (only with ε_n = 0) the K/‖K‖ (or M_n/‖M_n‖) term is taken as 0 (its subgradient), so
// nothing divides by zero; with ε_n > 0 every norm is at least √ε_n and the gradient at a zero slot is the
// function's own, g K / (‖K‖√ε_n + ε_p).
// ‖M_n‖ is computed once for all heads, and backward updates grad_M in one pass for all heads: the keys go
// in blocks of up to kKeyBlock (4) per group of slots, the group's values still in L1 for the next block,
// so any number of keys has its sums in registers. With the memory's batch innermost (ops/slots.hpp) each slot's norms and dot products are vertical SIMD sums
// along its r·c elements, lanes over the batch; the keys are transposed to that form in scratch. At a batch
// B of 1, 2, 4 or 8 (AVX-512) the same passes run on periodic lanes: W-wide chunks of a slot's r·c·B
// contiguous values, the sums folded to their B items once per slot (four slots' sums folded together).
// At a batch of 1 (the step that learns: one sequence an update) the memory is the row-major N × E matrix M
// of its slots and the keys the H × E matrix K, and the sums are small GEMMs: the dot products as M Kᵀ
// (N × H, transposed into d), grad_K = A M − kc ∘ K and grad_M += Aᵀ K − cm ∘ M with A = [g/D] (H × N):
// each a LIBXSMM kernel where the lane-wise passes folded every slot's sums and ran a 20-value slot in a
// full and a three-quarters-empty 16-lane chunk.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "matmem/ops/check.hpp"
#include "matmem/ops/fixed.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/slots.hpp"
#include "matmem/runtime/blas.hpp"

namespace matmem {
namespace {
constexpr std::size_t kMaxKeys = 16;

// saved (batch innermost): dot [H·N·B], ‖M‖ [N·B], ‖K‖ [H·B].
// scratch: the keys transposed [H·r·c·B]; backward also their gradients [H·r·c·B], a = g/D [H·N·B],
// cm = Σ_h g d ‖K‖/(D² ‖M‖) [N·B] and kc = Σ_n g d ‖M‖/(D² ‖K‖) [H·B].
std::int64_t saved_size(std::int64_t H, const Shape& m) {
  return H * m.batch * m.slots + m.batch * m.slots + H * m.batch;
}
std::int64_t scratch_size(std::int64_t H, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
  return 2 * H * E * B + H * N * B + N * B + H * B;
}

// The keys in blocks: f(h0, std::integral_constant<int, K>{}) for h0 = 0, 4, 8, … and K = min(4, H − h0),
// so every block's sums stay in registers (at 8 keys and 4 slots, a block of all 8 would need 36 of them).
constexpr int kKeyBlock = 4;
template <class F>
void for_each_key_block(std::int64_t H, F&& f) {
  for (std::int64_t h0 = 0; h0 < H; h0 += kKeyBlock)
    ops::with_fixed<1, kKeyBlock>(std::min<std::int64_t>(kKeyBlock, H - h0), [&](auto k) { f(h0, k); }, [] {});
}

template <class T>
struct CosineSimilarityKernel {
  // Slots n0 .. n0+S-1 over batch lanes q, keys h0 .. h0+K-1 (a block, for_each_key_block):
  // dot_h,n = Σ_e K_h M_n and, for the first block (Norms), nm_n = Σ_e M_n², S (K + 1) sums in registers;
  // each key element is loaded once for the group (ops::for_each_slot_group).
  template <int K, int S, bool Norms>
  static void slot_group_sums(const T* mem, const T* kt, std::int64_t h0, std::int64_t E, std::int64_t B,
                              std::int64_t N, std::int64_t n0, T* dot, T* nm) {
    const T* slot = mem + n0 * E * B;
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
      group_sums<K, S, Norms, decltype(x)>(slot, kt, h0, E, B, N, n0, q, dot, nm);
    });
  }
  // slot_group_sums at lanes q .. q+|X|−1: every pointer and size a parameter, so a SIMD store (may-alias)
  // makes the compiler reload none of them, as it reloaded each through the closure of an out-of-line lambda.
  template <int K, int S, bool Norms, class X>
  static void group_sums(const T* slot, const T* kt, std::int64_t h0, std::int64_t E, std::int64_t B, std::int64_t N,
                         std::int64_t n0, std::int64_t q, T* dot, T* nm) {
    std::array<X, S> am{};
    std::array<std::array<X, K>, S> ad{};
    for (std::int64_t e = 0; e < E; ++e) {
      std::array<X, K> kv;
      for (int h = 0; h < K; ++h) kv[h] = ops::load<X>(kt + ((h0 + h) * E + e) * B + q);
#pragma GCC unroll 8
      for (int u = 0; u < S; ++u) {
        const X mv = ops::load<X>(slot + (u * E + e) * B + q);
        if constexpr (Norms) am[u] += mv * mv;
        for (int h = 0; h < K; ++h) ad[u][h] += kv[h] * mv;
      }
    }
    for (int u = 0; u < S; ++u) {
      if constexpr (Norms) ops::store<X>(nm + (n0 + u) * B + q, am[u]);
      for (int h = 0; h < K; ++h) ops::store<X>(dot + ((h0 + h) * N + n0 + u) * B + q, ad[u][h]);
    }
  }

  // Slots n0 .. n0+S-1 of backward over batch lanes q, keys h0 .. h0+K-1 (a block): grad_M_n += Σ_h a_h K_h
  // (and − cm M_n in the first block, First), gkt_h += a_h M_n. The group's terms of gkt are summed in
  // registers (ops::for_each_slot_group), so grad_M is the only store per slot element. Blocks after the
  // first continue each element's sum in the same order from the value the block before stored.
  template <int K, int S, bool First>
  static void slot_group_backward(const OpCall<T>& c, const T* kt, T* gkt, const T* a, const T* cm, std::int64_t H,
                                  std::int64_t h0, std::int64_t E, std::int64_t B, std::int64_t N, std::int64_t n0) {
    const T* slot = c.x[H] + n0 * E * B;
    T* gslot = c.grad_x[H] ? c.grad_x[H] + n0 * E * B : nullptr;
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
      group_backward<K, S, First, decltype(x)>(slot, gslot, kt, gkt, a, cm, h0, E, B, N, n0, q);
    });
  }
  // slot_group_backward at lanes q .. q+|X|−1, its pointers and sizes parameters (as group_sums).
  template <int K, int S, bool First, class X>
  static void group_backward(const T* slot, T* gslot, const T* kt, T* gkt, const T* a, const T* cm, std::int64_t h0,
                             std::int64_t E, std::int64_t B, std::int64_t N, std::int64_t n0, std::int64_t q) {
    std::array<X, S> cmv;
    std::array<std::array<X, K>, S> av;
    for (int u = 0; u < S; ++u) {
      if constexpr (First) cmv[u] = ops::load<X>(cm + (n0 + u) * B + q);
      for (int h = 0; h < K; ++h) av[u][h] = ops::load<X>(a + ((h0 + h) * N + n0 + u) * B + q);
    }
    for (std::int64_t e = 0; e < E; ++e) {
      std::array<X, K> kv, gk;
      for (int h = 0; h < K; ++h) {
        kv[h] = ops::load<X>(kt + ((h0 + h) * E + e) * B + q);
        gk[h] = ops::load<X>(gkt + ((h0 + h) * E + e) * B + q);
      }
#pragma GCC unroll 8
      for (int u = 0; u < S; ++u) {
        const std::int64_t s = u * E * B + e * B + q;
        const X mv = ops::load<X>(slot + s);
        X g(T(0));
        if (gslot) g = First ? ops::load<X>(gslot + s) - cmv[u] * mv : ops::load<X>(gslot + s);
        for (int h = 0; h < K; ++h) {
          g += av[u][h] * kv[h];
          gk[h] += av[u][h] * mv;
        }
        if (gslot) ops::store<X>(gslot + s, g);
      }
      for (int h = 0; h < K; ++h) ops::store<X>(gkt + ((h0 + h) * E + e) * B + q, gk[h]);
    }
  }

  // Per (h, n) over the batch lanes: a = g/D (in place of g) and the norm terms' coefficients, with
  // t = g d / D²: cm_n = Σ_h t ‖K_h‖/‖M_n‖ and kc_h = Σ_n t ‖M_n‖/‖K_h‖ (a zero norm gives 0). One division
  // per (h, n), the norms' reciprocals taken once; kc stays in registers across the slots. Keys h0 ..
  // h0+K-1 (a block); blocks after the first (First = false) add to cm.
  template <int K, bool First>
  static void coefficients(const T* saved, T* a, T* cm, T* kc, std::int64_t H, std::int64_t h0, std::int64_t B,
                           std::int64_t N, T eps) {
    const T *dot = saved, *nm = dot + H * N * B, *nk = nm + N * B;
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
      using X = decltype(x);
      std::array<X, K> kn, inv_kn, kcv{};
      for (int h = 0; h < K; ++h) {
        kn[h] = ops::load<X>(nk + (h0 + h) * B + q);
        inv_kn[h] = ops::over_positive(X(T(1)), kn[h]);
      }
      for (std::int64_t n = 0; n < N; ++n) {
        const X mn = ops::load<X>(nm + n * B + q), inv_mn = ops::over_positive(X(T(1)), mn);
        X cmv = First ? X(T(0)) : ops::load<X>(cm + n * B + q);
        for (int h = 0; h < K; ++h) {
          const std::int64_t o = ((h0 + h) * N + n) * B + q;
          const X g = ops::load<X>(a + o), inv = X(T(1)) / (kn[h] * mn + X(eps));
          const X ga = g * inv, t = ga * ops::load<X>(dot + o) * inv;
          ops::store<X>(a + o, ga);
          cmv += t * kn[h] * inv_mn;
          kcv[h] += t * mn * inv_kn[h];
        }
        ops::store<X>(cm + n * B + q, cmv);
      }
      for (int h = 0; h < K; ++h) ops::store<X>(kc + (h0 + h) * B + q, kcv[h]);
    });
  }

#ifdef MATMEM_PERIODIC_LANES
  // The same passes on periodic lanes (a batch B < W dividing W, ops/slots.hpp): each slot, key and key
  // gradient is L = E·B consecutive values, walked in W-wide chunks (the last one masked); the per-(item,
  // slot) factors a, cm and ‖K‖ are periodic vectors and the per-(item, slot) sums ‖M_n‖², d end in folds.
  // step(i, ld, st) runs one chunk at offset i with the loads and stores of full chunks, then of the tail.
  using P = ops::Periodic<T>;
  using V = typename P::V;
  using Lanes = typename P::Lanes;
  template <class F>
  [[gnu::always_inline]] static void chunks(std::int64_t L, F&& step) {
    std::int64_t i = 0;
    for (; i + P::W <= L; i += P::W)
      step(i, [](const T* p) { return P::load(p); }, [](T* p, const V& v) { P::store(p, v); });
    if (i < L) {
      const auto k = P::first(L - i);
      step(i, [k](const T* p) { return P::load(p, k); }, [k](T* p, const V& v) { P::store(p, v, k); });
    }
  }
  // Keys h0 .. h0+K-1 (a block), the norms in the first (Norms), as slot_group_sums.
  template <int K, int S, bool Norms>
  static void slot_group_sums_periodic(const Lanes& ln, const T* mem, const T* kt, std::int64_t h0, std::int64_t L,
                                       std::int64_t N, std::int64_t n0, T* dot, T* nm) {
    const std::int64_t B = ln.B;
    const T* slot = mem + n0 * L;
    std::array<V, S> am{};
    std::array<std::array<V, K>, S> ad{};
    chunks(L, [&](std::int64_t i, auto ld, auto) {
      std::array<V, K> kv;
      for (int h = 0; h < K; ++h) kv[h] = ld(kt + (h0 + h) * L + i);
#pragma GCC unroll 8
      for (int u = 0; u < S; ++u) {
        const V mv = ld(slot + u * L + i);
        if constexpr (Norms) am[u] += mv * mv;
        for (int h = 0; h < K; ++h) ad[u][h] += kv[h] * mv;
      }
    });
    if constexpr (S == 4) {
      if (ln.packs4()) {  // the group's four slots' sums lie side by side: folded together
        if constexpr (Norms) ln.fold4_store(nm + n0 * B, am);
        for (int h = 0; h < K; ++h)
          ln.fold4_store(dot + ((h0 + h) * N + n0) * B, {ad[0][h], ad[1][h], ad[2][h], ad[3][h]});
        return;
      }
    }
    for (int u = 0; u < S; ++u) {
      if constexpr (Norms) ln.fold_store(nm + (n0 + u) * B, am[u], false);
      for (int h = 0; h < K; ++h) ln.fold_store(dot + ((h0 + h) * N + n0 + u) * B, ad[u][h], false);
    }
  }
  // Keys h0 .. h0+K-1 (a block), − cm M_n in the first (First), as slot_group_backward.
  template <int K, int S, bool First>
  static void slot_group_backward_periodic(const Lanes& ln, const OpCall<T>& c, const T* kt, T* gkt, const T* a,
                                           const T* cm, std::int64_t H, std::int64_t h0, std::int64_t L,
                                           std::int64_t N, std::int64_t n0) {
    const std::int64_t B = ln.B;
    const T* slot = c.x[H] + n0 * L;
    T* gslot = c.grad_x[H] ? c.grad_x[H] + n0 * L : nullptr;
    std::array<V, S> cmv;
    std::array<std::array<V, K>, S> av;
    for (int u = 0; u < S; ++u) {
      if constexpr (First) cmv[u] = ln.periodic(cm + (n0 + u) * B);
      for (int h = 0; h < K; ++h) av[u][h] = ln.periodic(a + ((h0 + h) * N + n0 + u) * B);
    }
    chunks(L, [&](std::int64_t i, auto ld, auto st) {
      std::array<V, K> kv, gk;
      for (int h = 0; h < K; ++h) {
        kv[h] = ld(kt + (h0 + h) * L + i);
        gk[h] = ld(gkt + (h0 + h) * L + i);
      }
#pragma GCC unroll 8
      for (int u = 0; u < S; ++u) {
        const std::int64_t s = u * L + i;
        const V mv = ld(slot + s);
        V g(T(0));
        if (gslot) g = First ? ld(gslot + s) - cmv[u] * mv : ld(gslot + s);
        for (int h = 0; h < K; ++h) {
          g += av[u][h] * kv[h];
          gk[h] += av[u][h] * mv;
        }
        if (gslot) st(gslot + s, g);
      }
      for (int h = 0; h < K; ++h) st(gkt + (h0 + h) * L + i, gk[h]);
    });
  }
  // coefficients() along the (slot, item) values of each head, N·B consecutive; kc_h's sum over the slots
  // ends in a fold. Keys h0 .. h0+K-1 (a block); blocks after the first add to cm.
  template <int K, bool First>
  static void coefficients_periodic(const Lanes& ln, const T* saved, T* a, T* cm, T* kc, std::int64_t H,
                                    std::int64_t h0, std::int64_t N, T eps) {
    const std::int64_t B = ln.B, NB = N * B;
    const T *dot = saved, *nm = dot + H * NB, *nk = nm + NB;
    std::array<V, K> kn, inv_kn, kcv{};
    for (int h = 0; h < K; ++h) {
      kn[h] = ln.periodic(nk + (h0 + h) * B);
      inv_kn[h] = ops::over_positive(V(T(1)), kn[h]);
    }
    chunks(NB, [&](std::int64_t i, auto ld, auto st) {  // masked lanes: g = 0, so t = 0
      const V mn = ld(nm + i), inv_mn = ops::over_positive(V(T(1)), mn);
      V cmv = First ? V(T(0)) : ld(cm + i);
      for (int h = 0; h < K; ++h) {
        const std::int64_t o = (h0 + h) * NB + i;
        const V g = ld(a + o), inv = V(T(1)) / (kn[h] * mn + V(eps));
        const V ga = g * inv, t = ga * ld(dot + o) * inv;
        st(a + o, ga);
        cmv += t * kn[h] * inv_mn;
        kcv[h] += t * mn * inv_kn[h];
      }
      st(cm + i, cmv);
    });
    for (int h = 0; h < K; ++h) ln.fold_store(kc + (h0 + h) * B, kcv[h], false);
  }
  static void forward_periodic(const OpCall<T>& c, T* kt) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, L = m.rows * m.cols * B, NB = N * B;
    const Lanes ln(B);
    T *dot = c.saved, *nm = dot + H * NB, *nk = nm + NB;
    ops::for_each_slot_group(N, [&](std::int64_t n0, auto s) {
      for_each_key_block(H, [&](std::int64_t h0, auto k) {
        constexpr int K = decltype(k)::value, S = decltype(s)::value;
        if (h0 == 0) slot_group_sums_periodic<K, S, true>(ln, c.x[H], kt, h0, L, N, n0, dot, nm);
        else slot_group_sums_periodic<K, S, false>(ln, c.x[H], kt, h0, L, N, n0, dot, nm);
      });
    });
    const T eps = T(c.attrs.f[0]), norm_eps = T(c.attrs.f[1]);
    chunks(NB, [&](std::int64_t i, auto ld, auto st) { st(nm + i, xsimd::sqrt(ld(nm + i) + V(norm_eps))); });
    for (int h = 0; h < H; ++h) {
      V acc(T(0));
      chunks(L, [&](std::int64_t i, auto ld, auto) {
        const V kv = ld(kt + h * L + i);
        acc += kv * kv;
      });
      ln.fold_store(nk + h * B, acc, false);
    }
    for (std::int64_t q = 0; q < H * B; ++q) nk[q] = std::sqrt(nk[q] + norm_eps);
    T* yt = kt + H * L;
    for (int h = 0; h < H; ++h) {
      const V kn = ln.periodic(nk + h * B);
      chunks(NB, [&](std::int64_t i, auto ld, auto st) {
        st(yt + h * NB + i, ld(dot + h * NB + i) / (kn * ld(nm + i) + V(eps)));
      });
    }
    ops::from_batch_inner(yt, B, H, N, c.y, /*accumulate=*/false);
  }
  static void backward_periodic(const OpCall<T>& c, T* kt, T* gkt, T* a, T* cm, T* kc) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, L = m.rows * m.cols * B;
    const Lanes ln(B);
    const T eps = T(c.attrs.f[0]);
    for_each_key_block(H, [&](std::int64_t h0, auto k) {
      if (h0 == 0) coefficients_periodic<decltype(k)::value, true>(ln, c.saved, a, cm, kc, H, h0, N, eps);
      else coefficients_periodic<decltype(k)::value, false>(ln, c.saved, a, cm, kc, H, h0, N, eps);
    });
    for (std::int64_t h = 0; h < H; ++h) {
      const V kcv = ln.periodic(kc + h * B);
      chunks(L, [&](std::int64_t i, auto ld, auto st) { st(gkt + h * L + i, -kcv * ld(kt + h * L + i)); });
    }
    ops::for_each_slot_group(N, [&](std::int64_t n0, auto s) {
      for_each_key_block(H, [&](std::int64_t h0, auto k) {
        constexpr int K = decltype(k)::value, S = decltype(s)::value;
        if (h0 == 0) slot_group_backward_periodic<K, S, true>(ln, c, kt, gkt, a, cm, H, h0, L, N, n0);
        else slot_group_backward_periodic<K, S, false>(ln, c, kt, gkt, a, cm, H, h0, L, N, n0);
      });
    });
  }
#endif

  // Σ_e x_e² for each of n rows of E values (row stride E) into out: at batch 1 in W-wide chunks, four rows'
  // sums folded together (ops/slots.hpp), where a scalar sum is a chain of E dependent additions.
  static void row_squares(const T* x, std::int64_t n, std::int64_t E, T* out) {
    std::int64_t r = 0;
#ifdef MATMEM_PERIODIC_LANES
    if (ops::use_periodic_lanes<T>(1)) {
      const Lanes ln(1);
      for (; r + 4 <= n; r += 4) {
        std::array<V, 4> acc{};
        chunks(E, [&](std::int64_t i, auto ld, auto) {
          for (int u = 0; u < 4; ++u) {
            const V v = ld(x + (r + u) * E + i);
            acc[u] += v * v;
          }
        });
        ln.fold4_store(out + r, acc);
      }
      for (; r < n; ++r) {
        V acc(T(0));
        chunks(E, [&](std::int64_t i, auto ld, auto) {
          const V v = ld(x + r * E + i);
          acc += v * v;
        });
        ln.fold_store(out + r, acc, false);
      }
    }
#endif
    for (; r < n; ++r) {
      T acc(0);
      for (std::int64_t e = 0; e < E; ++e) acc += x[r * E + e] * x[r * E + e];
      out[r] = acc;
    }
  }

  // Batch 1: d = (M Kᵀ)ᵀ through the keys transposed (E × H, in kt) and the product (N × H, after it); the
  // saved values in the layout of any batch (d as H × N), so backward's coefficients are the same pass.
  static void forward_one(const OpCall<T>& c, T* kt) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t N = m.slots, E = m.rows * m.cols;
    const T* mem = c.x[H];
    T *dot = c.saved, *nm = dot + H * N, *nk = nm + N, *mk = kt + H * E;
    const T eps = T(c.attrs.f[0]), norm_eps = T(c.attrs.f[1]);
    for (int h = 0; h < H; ++h) {
      for (std::int64_t e = 0; e < E; ++e) kt[e * H + h] = c.x[h][e];
      row_squares(c.x[h], 1, E, nk + h);
      nk[h] = std::sqrt(nk[h] + norm_eps);
    }
    blas::gemm<T>(false, false, N, H, E, T(1), mem, E, kt, H, T(0), mk, H);
    row_squares(mem, N, E, nm);
    for (std::int64_t n = 0; n < N; ++n) nm[n] = std::sqrt(nm[n] + norm_eps);
    for (int h = 0; h < H; ++h) {
      T* d = dot + h * N;
      T* y = c.y + h * N;
      for (std::int64_t n = 0; n < N; ++n) d[n] = mk[n * H + h];
      for (std::int64_t n = 0; n < N; ++n) y[n] = d[n] / (nk[h] * nm[n] + eps);
    }
  }

  static void forward(const OpCall<T>& c) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
    const T* mem = c.x[H];
    T *dot = c.saved, *nm = dot + H * N * B, *nk = nm + N * B;
    T* kt = c.scratch;
    if (B == 1) return forward_one(c, kt);
    for (int h = 0; h < H; ++h) ops::to_batch_inner(c.x[h], B, m.rows, m.cols, kt + h * E * B);
#ifdef MATMEM_PERIODIC_LANES
    if (ops::use_periodic_lanes<T>(B)) return forward_periodic(c, kt);
#endif
    ops::for_each_slot_group(N, [&](std::int64_t n0, auto s) {
      for_each_key_block(H, [&](std::int64_t h0, auto k) {
        if (h0 == 0) slot_group_sums<decltype(k)::value, decltype(s)::value, true>(mem, kt, h0, E, B, N, n0, dot, nm);
        else slot_group_sums<decltype(k)::value, decltype(s)::value, false>(mem, kt, h0, E, B, N, n0, dot, nm);
      });
    });
    const T eps = T(c.attrs.f[0]), norm_eps = T(c.attrs.f[1]);
    for (std::int64_t q = 0; q < N * B; ++q) nm[q] = std::sqrt(nm[q] + norm_eps);
    for (int h = 0; h < H; ++h)  // ‖K_h‖ per item: vertical sums over the batch lanes
      ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
        using X = decltype(x);
        X acc(T(0));
        for (std::int64_t e = 0; e < E; ++e) {
          const X kv = ops::load<X>(kt + (h * E + e) * B + q);
          acc += kv * kv;
        }
        ops::store<X>(nk + h * B + q, acc);
      });
    for (std::int64_t q = 0; q < H * B; ++q) nk[q] = std::sqrt(nk[q] + norm_eps);
    T* yt = kt + H * E * B;  // y with the batch innermost, then transposed to [B,H,N]
    for (int h = 0; h < H; ++h)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = (h * N + n) * B;
        ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
          using X = decltype(x);
          const X den = ops::load<X>(nk + h * B + q) * ops::load<X>(nm + n * B + q) + X(eps);
          ops::store<X>(yt + o + q, ops::load<X>(dot + o + q) / den);
        });
      }
    ops::from_batch_inner(yt, B, H, N, c.y, /*accumulate=*/false);
  }

  // Lanes over the batch: grad_K_h = -kc_h K_h + Σ_n a_h M_n (transposed) and grad_M_n += Σ_h a_h K_h - cm M_n,
  // the sums in one pass over M.
  static void backward_lanes(const OpCall<T>& c, const T* kt, T* gkt, T* a, T* cm, T* kc) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
    const T eps = T(c.attrs.f[0]);
    for_each_key_block(H, [&](std::int64_t h0, auto k) {
      if (h0 == 0) coefficients<decltype(k)::value, true>(c.saved, a, cm, kc, H, h0, B, N, eps);
      else coefficients<decltype(k)::value, false>(c.saved, a, cm, kc, H, h0, B, N, eps);
    });
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t e = 0; e < E; ++e)
        for (std::int64_t b = 0; b < B; ++b) gkt[(h * E + e) * B + b] = -kc[h * B + b] * kt[(h * E + e) * B + b];
    ops::for_each_slot_group(N, [&](std::int64_t n0, auto s) {
      for_each_key_block(H, [&](std::int64_t h0, auto k) {
        constexpr int K = decltype(k)::value, S = decltype(s)::value;
        if (h0 == 0) slot_group_backward<K, S, true>(c, kt, gkt, a, cm, H, h0, E, B, N, n0);
        else slot_group_backward<K, S, false>(c, kt, gkt, a, cm, H, h0, E, B, N, n0);
      });
    });
  }

  // Batch 1 (kt: K as H × E; a: g as H × N): the coefficients as at any batch, then grad_K = A M − kc ∘ K and
  // grad_M += Aᵀ K − cm ∘ M as two GEMMs and a pass.
  static void backward_one(const OpCall<T>& c, const T* kt, T* gkt, T* a, T* cm, T* kc) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t N = m.slots, E = m.rows * m.cols;
    const T eps = T(c.attrs.f[0]);
#ifdef MATMEM_PERIODIC_LANES
    if (ops::use_periodic_lanes<T>(1)) {
      const Lanes ln(1);
      for_each_key_block(H, [&](std::int64_t h0, auto k) {
        if (h0 == 0) coefficients_periodic<decltype(k)::value, true>(ln, c.saved, a, cm, kc, H, h0, N, eps);
        else coefficients_periodic<decltype(k)::value, false>(ln, c.saved, a, cm, kc, H, h0, N, eps);
      });
    } else
#endif
      for_each_key_block(H, [&](std::int64_t h0, auto k) {
        if (h0 == 0) coefficients<decltype(k)::value, true>(c.saved, a, cm, kc, H, h0, 1, N, eps);
        else coefficients<decltype(k)::value, false>(c.saved, a, cm, kc, H, h0, 1, N, eps);
      });
    const T* mem = c.x[H];
    for (int h = 0; h < H; ++h)
      for (std::int64_t e = 0; e < E; ++e) gkt[h * E + e] = -kc[h] * kt[h * E + e];
    blas::gemm<T>(false, false, H, E, N, T(1), a, N, mem, E, T(1), gkt, E);
    if (T* gm = c.grad_x[H]) {
      blas::gemm<T>(true, false, N, E, H, T(1), a, N, kt, E, T(1), gm, E);
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t e = 0; e < E; ++e) gm[n * E + e] -= cm[n] * mem[n * E + e];
    }
  }

  static void backward(const OpCall<T>& c) {
    const int H = c.arity - 1;
    const Shape& m = c.x_shape[H];
    const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
    T *kt = c.scratch, *gkt = kt + H * E * B, *a = gkt + H * E * B, *cm = a + H * N * B, *kc = cm + N * B;
    for (int h = 0; h < H; ++h) ops::to_batch_inner(c.x[h], B, m.rows, m.cols, kt + h * E * B);
    ops::to_batch_inner(c.grad_y, B, H, N, a);  // g, overwritten by a = g/D below
    if (B == 1)
      backward_one(c, kt, gkt, a, cm, kc);
#ifdef MATMEM_PERIODIC_LANES
    else if (ops::use_periodic_lanes<T>(B))
      backward_periodic(c, kt, gkt, a, cm, kc);
#endif
    else
      backward_lanes(c, kt, gkt, a, cm, kc);
    for (int h = 0; h < H; ++h)
      if (T* gk = c.grad_x[h]) ops::from_batch_inner(gkt + h * E * B, B, m.rows, m.cols, gk, /*accumulate=*/true);
  }

};

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs&) {
  const double mem = double(x[arity - 1].numel()), heads = double(arity - 1);
  return {(2.0 * heads + 2.0) * mem, (4.0 * heads + 2.0) * mem};
}
// At least: forward reads M; backward reads M and reads and writes grad_M.
Traffic traffic(const Shape* x, int arity, const Shape&, const OpAttrs&) {
  const double m = double(x[arity - 1].numel());
  return {m, 3.0 * m};
}
constexpr OpDef kOp = with_traffic(make_op<CosineSimilarityKernel>("cosine_similarity", flops), traffic);
}  // namespace

Var cosine_similarity(std::span<const Var> keys, Var memory, CosineEps eps) {
  const char* op = "cosine_similarity";
  if (keys.empty() || keys.size() > kMaxKeys)
    throw Error(fmt::format("{}: between 1 and {} keys, got {}", op, kMaxKeys, keys.size()));
  if (!(eps.product > 0) || !(eps.norm >= 0) || !std::isfinite(eps.product) || !std::isfinite(eps.norm))
    throw Error(fmt::format("{}: the product's epsilon must be positive and the norms' at least 0, both finite; "
                            "got {} and {}", op, eps.product, eps.norm));
  std::array<Var, kMaxKeys + 1> in;
  const Shape& m = memory.shape();
  ops::check_memory(op, memory);
  for (std::size_t h = 0; h < keys.size(); ++h) {
    ops::same_tape(op, keys[h], memory);
    const Shape& k = keys[h].shape();
    if (k.slots != 1 || k.batch != m.batch || k.rows != m.rows || k.cols != m.cols)
      ops::shape_error(op, "each key must be [B,r,c] and memory [B,N,r,c] with the same B, r, c", keys[h], memory);
    in[h] = keys[h];
  }
  in[keys.size()] = memory;
  const auto H = std::int64_t(keys.size());
  OpAttrs attrs;
  attrs.f[0] = eps.product;
  attrs.f[1] = eps.norm;
  return memory.tape->apply(kOp, std::span<const Var>(in.data(), keys.size() + 1),
                            {m.batch, 1, H, m.slots}, attrs, saved_size(H, m), scratch_size(H, m));
}

Var cosine_similarity(Var key, Var memory, CosineEps eps) {
  return cosine_similarity(std::span<const Var>(&key, 1), memory, eps);
}

OpSample cosine_similarity_sample(Rng& rng, SampleSize size, int keys) {
  const SampleDims d = sample_dims(size);
  OpSample sample;
  for (int h = 1; h <= keys; ++h)
    sample.inputs.push_back(
        {keys == 1 ? std::string("K") : fmt::format("K{}", h), random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))});
  sample.inputs.push_back({"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))});
  sample.apply = [keys](Tape&, std::span<const Var> x) {
    return cosine_similarity(x.first(std::size_t(keys)), x[std::size_t(keys)]);
  };
  return sample;
}

OpEntry cosine_similarity_entry() {
  return {"cosine_similarity", [](Rng& rng, SampleSize s) { return cosine_similarity_sample(rng, s, 1); }};
}

}  // namespace matmem
