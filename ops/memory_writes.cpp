// memory_writes: an NTM time step's reads and all its writes of the memory in one pass over it: the writes
// in head order, each a memory_write of the memory the one before left, and the reads of M before them.
//   M:[B,N,r,c] (N ≥ 2), writes k = 1..K: w_k:[B,N], E_k (erase), A_k (add):[B,r,c]; read weightings
//   v_1..v_R:[B,N] (R ≥ 0)  ->  M' = M_K [B,N,r,c], and R_j = Σ_n v_j,n M_n [B,r,c] for j = 1..R
//   M_0 = M,   M_k,n = M_{k−1},n ⊙ (1 − w_k,n E_k) + w_k,n A_k
// Elementwise along a slot the writes compose, so each element of M goes through all K writes in registers.
// With G_K the gradient of M' and G_{k−1} = G_k ⊙ (1 − w_k E_k) (each element's, walking the writes back, its
// M_{k−1} recomputed from M in registers), and H_j the gradients of the reads:
//   grad_M_n    = G_0,n + Σ_j v_j,n H_j      (assigned when fresh, as memory_write)
//   grad_w_k,n += <G_k,n, A_k − M_{k−1},n ⊙ E_k>_F,   grad_E_k −= Σ_n w_k,n G_k,n ⊙ M_{k−1},n,
//   grad_A_k   += Σ_n w_k,n G_k,n,                    grad_v_j,n += <H_j, M_n>_F
// Equal to memory_read and K memory_writes one after another (a test checks values and every gradient).
// At a batch of 1, 2, 4 or 8 (AVX-512) the lanes run along each slot's values (periodic lanes, as
// memory_read_write's), not over the batch; at 1 the reads are GEMMs and backward goes chunk by chunk over
// all the slots (MemoryWritesKernel::backward_one).
// Forward reads M once and writes M' once, where the separate writes read and write the memory K times;
// backward reads M and G_K once and writes grad_M once, where they read 2K times and write K times. Nothing
// is saved. Layout as in ops/slots.hpp: lanes over the batch (simd_loop) at other batches, the small operands
// transposed in scratch; the slots' elements in blocks of kBlock, every slot of a block before the next
// block, so that the block's E_k, A_k, read sums and grad_E_k, grad_A_k terms stay in L1 across the slots.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "matmem/ops/check.hpp"
#include "matmem/ops/fixed.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/memory_read_write.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/slots.hpp"

namespace matmem {
namespace {
constexpr std::int64_t kBlock = 12;  // elements of a slot per block
constexpr int kMaxWrites = 16;

// Inputs: M, then w_k, E_k, A_k for each write, then the read weightings; attrs.i[0] = K.
// scratch: w [K·N·B], E, A [K·r·c·B], v [R·N·B], the reads (forward) or their gradients (backward) [R·r·c·B],
// all transposed; backward also grad_w [K·N·B], grad_E, grad_A [K·r·c·B], grad_v [R·N·B].
// At batch 1 backward also keeps each slot's unfolded grad_w_k sums, K·N vectors of kOneLanes, then the reads'
// GEMMs' [R·(E + N)] (ops::reads_by_gemm_backward).
constexpr std::int64_t kOneLanes = 16;
std::int64_t scratch_size(std::int64_t K, std::int64_t R, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
  return 2 * (K * (N + 2 * E) * B + R * N * B) + R * E * B + (B == 1 ? K * N * kOneLanes + R * (E + N) : 0);
}

template <class T>
struct MemoryWritesKernel {
  // The kernels take it by value: read through a reference, its pointers and sizes were loaded again after
  // every SIMD store (a may-alias store could have changed them), in the innermost loops.
  struct Work {
    std::int64_t B = 0, N = 0, E = 0, K = 0, R = 0;
    T *wt, *et, *at, *vt, *rt, *gwt, *get, *gat, *gvt;
  };
  static Work prepare(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    Work k;
    k.B = m.batch, k.N = m.slots, k.E = m.rows * m.cols, k.K = c.attrs.i[0], k.R = c.arity - 1 - 3 * k.K;
    const std::int64_t B = k.B, N = k.N, E = k.E, K = k.K, R = k.R;
    k.wt = c.scratch, k.et = k.wt + K * N * B, k.at = k.et + K * E * B, k.vt = k.at + K * E * B;
    k.rt = k.vt + R * N * B, k.gwt = k.rt + R * E * B, k.get = k.gwt + K * N * B, k.gat = k.get + K * E * B;
    k.gvt = k.gat + K * E * B;
    for (std::int64_t j = 0; j < K; ++j) {
      ops::to_batch_inner(c.x[1 + 3 * j], B, 1, N, k.wt + j * N * B);
      ops::to_batch_inner(c.x[2 + 3 * j], B, m.rows, m.cols, k.et + j * E * B);
      ops::to_batch_inner(c.x[3 + 3 * j], B, m.rows, m.cols, k.at + j * E * B);
    }
    for (std::int64_t r = 0; r < R; ++r) ops::to_batch_inner(c.x[1 + 3 * K + r], B, 1, N, k.vt + r * N * B);
    return k;
  }
  // f(std::integral_constant<int, KK>{}) with KK = K for 2 ≤ K ≤ 8 writes, else KK = 0 (K at run time), so
  // that each element's K intermediate values and the slot's weights stay in registers.
  template <class F>
  static void with_writes(std::int64_t K, F&& f) {
    ops::with_fixed<2, 8>(K, f, [&] { f(std::integral_constant<int, 0>{}); });
  }

  template <int KK>
  static void forward_lanes(const OpCall<T>& c, Work k) {  // by value (Work)
    const std::int64_t B = k.B, N = k.N, E = k.E, K = KK > 0 ? KK : k.K, R = k.R;
    constexpr std::size_t kW = KK > 0 ? std::size_t(KK) : std::size_t(kMaxWrites);
    const T* mem = c.x[0];
    T* y = c.y;
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) __attribute__((always_inline)) {
      using X = decltype(x);
      for (std::int64_t e0 = 0; e0 < E; e0 += kBlock) {
        const std::int64_t e1 = std::min(E, e0 + kBlock);
        for (std::int64_t n = 0; n < N; ++n) {
          std::array<X, kW> wv;
          for (std::int64_t j = 0; j < K; ++j) wv[j] = ops::load<X>(k.wt + (j * N + n) * B + q);
          for (std::int64_t e = e0; e < e1; ++e) {
            const std::int64_t i = e * B + q;
            X mv = ops::load<X>(mem + n * E * B + i);
            for (std::int64_t r = 0; r < R; ++r) {
              T* rp = k.rt + r * E * B + i;
              ops::store<X>(rp, ops::load<X>(rp) + ops::load<X>(k.vt + (r * N + n) * B + q) * mv);
            }
            for (std::int64_t j = 0; j < K; ++j)
              mv = mv + wv[j] * (ops::load<X>(k.at + j * E * B + i) - mv * ops::load<X>(k.et + j * E * B + i));
            ops::store<X>(y + n * E * B + i, mv);
          }
        }
      }
    });
  }

  template <int KK>
  static void backward_lanes(const OpCall<T>& c, Work k) {  // by value (Work)
    const std::int64_t B = k.B, N = k.N, E = k.E, K = KK > 0 ? KK : k.K, R = k.R;
    constexpr std::size_t kW = KK > 0 ? std::size_t(KK) : std::size_t(kMaxWrites);
    const T *mem = c.x[0], *gy = c.grad_y;
    T* gm = c.grad_x[0];
    const bool assign_m = c.fresh(0);
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) __attribute__((always_inline)) {
      using X = decltype(x);
      for (std::int64_t e0 = 0; e0 < E; e0 += kBlock) {
        const std::int64_t e1 = std::min(E, e0 + kBlock);
        const bool first = e0 == 0;  // the first block assigns the slot sums
        for (std::int64_t n = 0; n < N; ++n) {
          std::array<X, kW> wv, gw;
          for (std::int64_t j = 0; j < K; ++j) {
            wv[j] = ops::load<X>(k.wt + (j * N + n) * B + q);
            gw[j] = X(T(0));
          }
          for (std::int64_t e = e0; e < e1; ++e) {
            const std::int64_t i = e * B + q;
            std::array<X, kW> mk;  // M_0 .. M_{K−1} at this element
            mk[0] = ops::load<X>(mem + n * E * B + i);
            for (std::int64_t j = 0; j + 1 < K; ++j)
              mk[j + 1] = mk[j] + wv[j] * (ops::load<X>(k.at + j * E * B + i) - mk[j] * ops::load<X>(k.et + j * E * B + i));
            X g = ops::load<X>(gy + n * E * B + i);
            for (std::int64_t j = K - 1; j >= 0; --j) {
              const X ev = ops::load<X>(k.et + j * E * B + i), av = ops::load<X>(k.at + j * E * B + i);
              const X wg = wv[j] * g;
              gw[j] += g * (av - mk[j] * ev);
              T *ge = k.get + j * E * B + i, *ga = k.gat + j * E * B + i;
              ops::store<X>(ge, ops::load<X>(ge) - wg * mk[j]);
              ops::store<X>(ga, ops::load<X>(ga) + wg);
              g = g - wg * ev;
            }
            for (std::int64_t r = 0; r < R; ++r)
              g += ops::load<X>(k.vt + (r * N + n) * B + q) * ops::load<X>(k.rt + r * E * B + i);
            if (gm) ops::store<X>(gm + n * E * B + i, assign_m ? g : ops::load<X>(gm + n * E * B + i) + g);
          }
          // grad_v_j,n's sum over the block's elements in a register, in element order as before: added into
          // the stored sum at each element, it was a chain of store-to-load forwards, the op's hottest loop.
          for (std::int64_t r = 0; r < R; ++r) {
            T* gv = k.gvt + (r * N + n) * B + q;
            X acc = first ? X(T(0)) : ops::load<X>(gv);
            for (std::int64_t e = e0; e < e1; ++e)
              acc = acc + ops::load<X>(k.rt + r * E * B + e * B + q) * ops::load<X>(mem + n * E * B + e * B + q);
            ops::store<X>(gv, acc);
          }
          for (std::int64_t j = 0; j < K; ++j) {
            T* p = k.gwt + (j * N + n) * B + q;
            ops::store<X>(p, first ? gw[j] : ops::load<X>(p) + gw[j]);
          }
        }
      }
    });
  }

#ifdef MATMEM_PERIODIC_LANES
  // Periodic lanes (a batch B < W dividing W, ops/slots.hpp), as memory_read_write's: a slot, each E_k and A_k,
  // each read and its gradient are L = E·B consecutive values, walked in W-wide chunks, the last one masked;
  // w_k,n and v_j,n are periodic vectors, and grad_w_k,n and grad_v_j,n (sums along a slot) end in folds.
  // Slot after slot: a chunk of the slot goes through every write in registers, the E_k and A_k chunks and the
  // reads' sums (forward) or the grad_E_k and grad_A_k terms (backward) coming from scratch, all of it in L1.
  using P = ops::Periodic<T>;
  using V = typename P::V;
  using Mask = typename P::Mask;
  static Mask chunk_mask(std::int64_t i, std::int64_t L) { return i + P::W <= L ? P::kFull : P::first(L - i); }

  template <int KK>
  static void forward_periodic(const OpCall<T>& c, Work k) {  // by value (Work)
    const std::int64_t B = k.B, N = k.N, L = k.E * k.B, K = KK > 0 ? KK : k.K, R = k.R;
    constexpr std::size_t kW = KK > 0 ? std::size_t(KK) : std::size_t(kMaxWrites);
    const typename P::Lanes ln(B);
    for (std::int64_t n = 0; n < N; ++n) {
      std::array<V, kW> wv;
      std::array<V, Tape::kMaxOutputs> vv;
      for (std::int64_t j = 0; j < K; ++j) wv[j] = ln.periodic(k.wt + (j * N + n) * B);
      for (std::int64_t r = 0; r < R; ++r) vv[r] = ln.periodic(k.vt + (r * N + n) * B);
      const T* mp = c.x[0] + n * L;
      T* yp = c.y + n * L;
      for (std::int64_t i = 0; i < L; i += P::W) {
        const Mask m = chunk_mask(i, L);
        ops::prefetch_for_write(yp + i + ops::kPrefetchSlots * L);
        V mv = P::load(mp + i, m);
        for (std::int64_t r = 0; r < R; ++r) {
          T* rp = k.rt + r * L + i;
          P::store(rp, P::load(rp, m) + vv[r] * mv, m);
        }
        for (std::int64_t j = 0; j < K; ++j)
          mv = mv + wv[j] * (P::load(k.at + j * L + i, m) - mv * P::load(k.et + j * L + i, m));
        P::store(yp + i, mv, m);
      }
    }
  }

  template <int KK>
  static void backward_periodic(const OpCall<T>& c, Work k) {  // by value (Work)
    const std::int64_t B = k.B, N = k.N, L = k.E * k.B, K = KK > 0 ? KK : k.K, R = k.R;
    constexpr std::size_t kW = KK > 0 ? std::size_t(KK) : std::size_t(kMaxWrites);
    const typename P::Lanes ln(B);
    T* gm = c.grad_x[0];
    const bool assign_m = c.fresh(0);
    for (std::int64_t n = 0; n < N; ++n) {
      std::array<V, kW> wv, gw;
      std::array<V, Tape::kMaxOutputs> vv, gv;
      for (std::int64_t j = 0; j < K; ++j) {
        wv[j] = ln.periodic(k.wt + (j * N + n) * B);
        gw[j] = V(T(0));
      }
      for (std::int64_t r = 0; r < R; ++r) {
        vv[r] = ln.periodic(k.vt + (r * N + n) * B);
        gv[r] = V(T(0));
      }
      const T *mp = c.x[0] + n * L, *gp = c.grad_y + n * L;
      for (std::int64_t i = 0; i < L; i += P::W) {
        const Mask m = chunk_mask(i, L);
        std::array<V, kW> mk;  // M_0 .. M_{K−1} at this chunk
        mk[0] = P::load(mp + i, m);
        for (std::int64_t j = 0; j + 1 < K; ++j)
          mk[j + 1] = mk[j] + wv[j] * (P::load(k.at + j * L + i, m) - mk[j] * P::load(k.et + j * L + i, m));
        V g = P::load(gp + i, m);
        for (std::int64_t j = K - 1; j >= 0; --j) {
          const V ev = P::load(k.et + j * L + i, m), av = P::load(k.at + j * L + i, m), wg = wv[j] * g;
          gw[j] += g * (av - mk[j] * ev);
          T *ge = k.get + j * L + i, *ga = k.gat + j * L + i;
          P::store(ge, P::load(ge, m) - wg * mk[j], m);
          P::store(ga, P::load(ga, m) + wg, m);
          g = g - wg * ev;
        }
        for (std::int64_t r = 0; r < R; ++r) {
          const V h = P::load(k.rt + r * L + i, m);
          g += vv[r] * h;
          gv[r] += h * mk[0];
        }
        if (gm) P::store(gm + n * L + i, assign_m ? g : P::load(gm + n * L + i, m) + g, m);
      }
      for (std::int64_t j = 0; j < K; ++j) ln.fold_store(k.gwt + (j * N + n) * B, gw[j], false);
      for (std::int64_t r = 0; r < R; ++r) ln.fold_store(k.gvt + (r * N + n) * B, gv[r], false);
    }
  }

  // Batch 1: the memory is the N × E matrix of its slots, and the reads are GEMMs beside the writes' pass
  // (ops::reads_by_gemm, as memory_read_write's), so no slot's read sums end in folds. Backward walks the slots'
  // values chunk by chunk, every slot for one chunk before the next: the chunk's E_k and A_k and its grad_E_k
  // and grad_A_k sums stay in registers over the slots (slot after slot, they were read and written back at
  // every slot), and each slot's grad_w_k sums are kept unfolded in scratch across the chunks and folded at the
  // end, four slots at a time.
  // Scratch after grad_v: the unfolded sums [n][j], vectors of kOneLanes, then the reads' GEMMs'.
  static T* unfolded(const Work& k) { return k.gvt + k.R * k.N; }

  template <int KK>
  static void backward_one(const OpCall<T>& c, Work k) {  // by value (Work)
    static_assert(kOneLanes >= P::W);
    const std::int64_t N = k.N, L = k.E, K = KK > 0 ? KK : k.K;
    constexpr std::size_t kW = KK > 0 ? std::size_t(KK) : std::size_t(kMaxWrites);
    const typename P::Lanes ln(1);
    T* gm = c.grad_x[0];
    T* part = unfolded(k);
    const bool assign_m = c.fresh(0);
    for (std::int64_t i = 0; i < L; i += P::W) {
      const Mask m = chunk_mask(i, L);
      const bool first = i == 0;
      std::array<V, kW> ev, av, ge, ga;
      for (std::int64_t j = 0; j < K; ++j) {
        ev[j] = P::load(k.et + j * L + i, m);
        av[j] = P::load(k.at + j * L + i, m);
        ge[j] = V(T(0)), ga[j] = V(T(0));
      }
      const T *mp = c.x[0] + i, *gp = c.grad_y + i;
      T* op = gm ? gm + i : nullptr;
      for (std::int64_t n = 0; n < N; ++n, mp += L, gp += L) {
        std::array<V, kW> wv, mk;  // M_0 .. M_{K−1} at this chunk
        for (std::int64_t j = 0; j < K; ++j) wv[j] = V(k.wt[j * N + n]);
        mk[0] = P::load(mp, m);
        for (std::int64_t j = 0; j + 1 < K; ++j) mk[j + 1] = mk[j] + wv[j] * (av[j] - mk[j] * ev[j]);
        V g = P::load(gp, m);
        T* pn = part + n * K * kOneLanes;
        for (std::int64_t j = K - 1; j >= 0; --j) {
          const V wg = wv[j] * g, t = g * (av[j] - mk[j] * ev[j]);
          T* pj = pn + j * kOneLanes;
          P::store(pj, first ? t : P::load(pj) + t);
          ge[j] -= wg * mk[j];
          ga[j] += wg;
          g = g - wg * ev[j];
        }
        if (op) {
          P::store(op, assign_m ? g : P::load(op, m) + g, m);
          op += L;
        }
      }
      for (std::int64_t j = 0; j < K; ++j) {
        P::store(k.get + j * L + i, ge[j], m);
        P::store(k.gat + j * L + i, ga[j], m);
      }
    }
    std::int64_t n = 0;
    for (; n + 4 <= N; n += 4)
      for (std::int64_t j = 0; j < K; ++j) {
        std::array<V, 4> a;
        for (int u = 0; u < 4; ++u) a[u] = P::load(part + ((n + u) * K + j) * kOneLanes);
        ln.fold4_store(k.gwt + j * N + n, a);
      }
    for (; n < N; ++n)
      for (std::int64_t j = 0; j < K; ++j)
        ln.fold_store(k.gwt + j * N + n, P::load(part + (n * K + j) * kOneLanes), false);
  }
#endif
  // Periodic lanes at a batch of 1, 2, 4 or 8 (AVX-512 builds), else lanes over the batch.
  static bool periodic(const Work& k) { return ops::use_periodic_lanes<T>(k.B); }

  static void forward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const Shape& m = c.x_shape[0];
    std::fill_n(k.rt, k.R * k.E * k.B, T(0));
#ifdef MATMEM_PERIODIC_LANES
    if (k.B == 1 && periodic(k)) {  // the writes' pass, then the reads as one GEMM
      Work writes = k;
      writes.R = 0;
      with_writes(k.K, [&](auto kk) { forward_periodic<decltype(kk)::value>(c, writes); });
      if (k.R > 0) ops::reads_by_gemm<T>(k.N, k.E, k.R, c.x[0], k.vt, k.rt);
    } else if (periodic(k))
      with_writes(k.K, [&](auto kk) { forward_periodic<decltype(kk)::value>(c, k); });
    else
#endif
      with_writes(k.K, [&](auto kk) { forward_lanes<decltype(kk)::value>(c, k); });
    for (std::int64_t r = 0; r < k.R; ++r)
      ops::from_batch_inner(k.rt + r * k.E * k.B, k.B, m.rows, m.cols, c.ys[1 + r], /*accumulate=*/false);
  }

  static void backward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const std::int64_t B = k.B, N = k.N, E = k.E, K = k.K, R = k.R;
    const Shape& m = c.x_shape[0];
    for (std::int64_t r = 0; r < R; ++r) ops::to_batch_inner(c.grad_ys[1 + r], B, m.rows, m.cols, k.rt + r * E * B);
    std::fill_n(k.get, 2 * K * E * B, T(0));  // grad_E and grad_A, side by side
#ifdef MATMEM_PERIODIC_LANES
    if (B == 1 && periodic(k)) {  // the writes' pass first: it assigns grad_M where fresh, the reads' GEMM adds
      with_writes(K, [&](auto kk) { backward_one<decltype(kk)::value>(c, k); });
      if (R > 0)
        ops::reads_by_gemm_backward<T>(N, E, R, c.x[0], k.vt, k.rt, c.grad_x[0], k.gvt,
                                       unfolded(k) + K * N * kOneLanes);
    } else if (periodic(k))
      with_writes(K, [&](auto kk) { backward_periodic<decltype(kk)::value>(c, k); });
    else
#endif
      with_writes(K, [&](auto kk) { backward_lanes<decltype(kk)::value>(c, k); });
    for (std::int64_t j = 0; j < K; ++j) {
      if (T* g = c.grad_x[1 + 3 * j]) ops::from_batch_inner(k.gwt + j * N * B, B, 1, N, g, !c.fresh(1 + 3 * int(j)));
      if (T* g = c.grad_x[2 + 3 * j])
        ops::from_batch_inner(k.get + j * E * B, B, m.rows, m.cols, g, !c.fresh(2 + 3 * int(j)));
      if (T* g = c.grad_x[3 + 3 * j])
        ops::from_batch_inner(k.gat + j * E * B, B, m.rows, m.cols, g, !c.fresh(3 + 3 * int(j)));
    }
    for (std::int64_t r = 0; r < R; ++r)
      if (T* g = c.grad_x[1 + 3 * K + r])
        ops::from_batch_inner(k.gvt + r * N * B, B, 1, N, g, !c.fresh(1 + 3 * int(K) + int(r)));
  }
};

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs& a) {
  const double mem = double(x[0].numel()), writes = double(a.i[0]), reads = double(arity - 1 - 3 * a.i[0]);
  return {(4.0 * writes + 2.0 * reads) * mem, (10.0 * writes + 4.0 * reads) * mem};
}
// At least, for any number of writes and reads: forward reads M and writes M'; backward reads M and grad_M'
// and writes grad_M (the unfused writes move the memory that much once per write).
Traffic traffic(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double m = double(x[0].numel());
  return {2.0 * m, 3.0 * m};
}
constexpr OpDef kOp =
    with_traffic(make_op<MemoryWritesKernel>("memory_writes", flops, /*assigns_fresh=*/true), traffic);
}  // namespace

void memory_writes(Var memory, std::span<const Var> read_weights, std::span<const Var> w, std::span<const Var> erase,
                   std::span<const Var> add, std::span<Var> out) {
  const char* op = "memory_writes";
  const std::size_t K = w.size(), R = read_weights.size();
  if (K < 1 || K > std::size_t(kMaxWrites) || erase.size() != K || add.size() != K)
    throw Error(fmt::format("{}: between 1 and {} writes, each a weighting, an erase and an add; got {}, {} and {}",
                            op, kMaxWrites, K, erase.size(), add.size()));
  if (R + 1 > Tape::kMaxOutputs)
    throw Error(fmt::format("{}: at most {} read weightings, got {}", op, Tape::kMaxOutputs - 1, R));
  if (out.size() != R + 1)
    throw Error(fmt::format("{}: room for {} outputs (the memory and {} reads), given {}", op, R + 1, R, out.size()));
  std::array<Var, 1 + 3 * kMaxWrites + Tape::kMaxOutputs> in;
  in[0] = memory;
  for (std::size_t j = 0; j < K; ++j) {
    ops::check_write(op, memory, w[j], erase[j], add[j]);
    in[1 + 3 * j] = w[j], in[2 + 3 * j] = erase[j], in[3 + 3 * j] = add[j];
  }
  const Shape& m = memory.shape();
  std::array<Shape, Tape::kMaxOutputs> shapes;
  shapes[0] = m;
  for (std::size_t r = 0; r < R; ++r) {
    ops::check_weighting(op, memory, read_weights[r]);
    in[1 + 3 * K + r] = read_weights[r];
    shapes[1 + r] = matrices(m.batch, m.rows, m.cols);
  }
  OpAttrs attrs;
  attrs.i[0] = std::int64_t(K);
  memory.tape->apply(kOp, std::span<const Var>(in.data(), 1 + 3 * K + R), std::span<const Shape>(shapes.data(), R + 1),
                     out, attrs, 0, scratch_size(std::int64_t(K), std::int64_t(R), m));
}

Var memory_writes(Var memory, std::span<const Var> w, std::span<const Var> erase, std::span<const Var> add) {
  Var out;
  memory_writes(memory, {}, w, erase, add, std::span<Var>(&out, 1));
  return out;
}

OpSample memory_writes_sample(Rng& rng, SampleSize size, int writes, int reads) {
  const SampleDims d = sample_dims(size);
  OpSample sample;
  sample.inputs = {{"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))}};
  for (int j = 1; j <= writes; ++j) {
    sample.inputs.push_back({fmt::format("w{}", j), random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)});
    sample.inputs.push_back({fmt::format("E{}", j), random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols), 0.0, 1.0)});
    sample.inputs.push_back({fmt::format("A{}", j), random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))});
  }
  for (int r = 1; r <= reads; ++r)
    sample.inputs.push_back({fmt::format("v{}", r), random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)});
  // One output that depends on M' and every read, cheaply: memory_read(M', w_1) + Σ_j j R_j.
  sample.apply = [writes, reads](Tape&, std::span<const Var> x) {
    std::array<Var, 3 * kMaxWrites> w, e, a;
    for (int j = 0; j < writes; ++j) w[j] = x[1 + 3 * j], e[j] = x[2 + 3 * j], a[j] = x[3 + 3 * j];
    const auto K = std::size_t(writes);
    std::array<Var, Tape::kMaxOutputs> out;
    memory_writes(x[0], x.subspan(1 + 3 * K, std::size_t(reads)), std::span<const Var>(w.data(), K),
                  std::span<const Var>(e.data(), K), std::span<const Var>(a.data(), K),
                  std::span<Var>(out.data(), std::size_t(reads) + 1));
    Var y = memory_read(out[0], x[1]);
    for (int r = 0; r < reads; ++r) y = add(y, scale(out[std::size_t(r) + 1], double(r + 1)));
    return y;
  };
  return sample;
}

OpEntry memory_writes_entry() {
  return {"memory_writes", [](Rng& rng, SampleSize s) { return memory_writes_sample(rng, s, 3, 2); }};
}

}  // namespace matmem
