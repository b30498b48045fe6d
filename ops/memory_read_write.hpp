// Internal: the kernel of memory_write and memory_read_write (the math is in ops/memory_read_write.cpp):
// inputs M, w, E, A, then R read weightings (R = 0 for memory_write); outputs M' and the R reads.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "matmem/autodiff/tape.hpp"
#include "matmem/ops/fixed.hpp"
#include "matmem/ops/slots.hpp"
#include "matmem/runtime/blas.hpp"

namespace matmem::ops {

// scratch: w [N·B], E, A [r·c·B], the read weightings [R·N·B], the reads (forward) or their gradients
// (backward) [R·r·c·B], all transposed; backward also grad_w [N·B], grad_E, grad_A [r·c·B], grad_w_k [R·N·B];
// at batch 1 with reads, the read gradients transposed [r·c·R] and M Gᵀ [N·R] (reads_by_gemm_backward).
inline std::int64_t memory_read_write_scratch(std::int64_t R, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
  return 2 * (N * B + 2 * E * B + R * N * B) + R * E * B + (B == 1 ? R * (E + N) : 0);
}

// The values a call must move at least (OpDef::traffic), with or without reads: forward reads M and writes M';
// backward reads M and grad_M' and writes grad_M.
inline Traffic memory_write_traffic(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double m = double(x[0].numel());
  return {2.0 * m, 3.0 * m};
}

// Batch 1, R ≥ 1 reads: the memory is the N × E matrix M of its slots, the read weightings the R × N matrix
// W_r, and the reads are GEMMs: forward reads = W_r M (R × E); backward, from the reads' gradients G_r,
// grad_M += W_rᵀ G_r (when grad_m) and grad_w = G_r Mᵀ, formed as (M G_rᵀ)ᵀ in tmp [R·(E + N)] (LIBXSMM has no
// kernel with a transposed second operand). Per slot the lane-wise passes folded each read's sum, R + 1 folds a
// slot. memory_read_write's and memory_writes' reads at batch 1.
template <class T>
void reads_by_gemm(std::int64_t N, std::int64_t E, std::int64_t R, const T* mem, const T* w_r, T* reads) {
  blas::gemm<T>(false, false, R, E, N, T(1), w_r, N, mem, E, T(0), reads, E);
}
template <class T>
void reads_by_gemm_backward(std::int64_t N, std::int64_t E, std::int64_t R, const T* mem, const T* w_r,
                            const T* grad_reads, T* grad_m, T* grad_w, T* tmp) {
  if (grad_m) blas::gemm<T>(true, false, N, E, R, T(1), w_r, N, grad_reads, E, T(1), grad_m, E);
  T *grt = tmp, *mg = grt + E * R;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t e = 0; e < E; ++e) grt[e * R + r] = grad_reads[r * E + e];
  blas::gemm<T>(false, false, N, R, E, T(1), mem, E, grt, R, T(0), mg, R);
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t n = 0; n < N; ++n) grad_w[r * N + n] = mg[n * R + r];
}

// R = arity - 4 reads: memory_read_write has R ≥ 1, memory_write R = 0.
template <class T>
struct MemoryReadWriteKernel {
  static constexpr int kAnyReads = -1;  // RK below: the read count at run time
  template <int RK>
  static constexpr std::size_t kReads = RK > 0 ? std::size_t(RK) : RK == 0 ? 1 : Tape::kMaxOutputs;
  // f(std::integral_constant<int, RK>{}) with RK = R for R ≤ 2 reads, else kAnyReads.
  template <class F>
  static void with_reads(std::int64_t R, F&& f) {
    ops::with_fixed<0, 2>(R, f, [&] { f(std::integral_constant<int, kAnyReads>{}); });
  }
  // Pointers into scratch, and the small operands transposed.
  struct Work {
    std::int64_t B = 0, N = 0, E = 0, R = 0;
    T *wt = nullptr, *et = nullptr, *at = nullptr, *rwt = nullptr, *rt = nullptr, *gwt = nullptr, *get = nullptr,
      *gat = nullptr, *grwt = nullptr;
  };
  static Work prepare(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    Work k;
    k.B = m.batch, k.N = m.slots, k.E = m.rows * m.cols, k.R = c.arity - 4;
    const std::int64_t B = k.B, N = k.N, E = k.E, R = k.R;
    k.wt = c.scratch, k.et = k.wt + N * B, k.at = k.et + E * B, k.rwt = k.at + E * B, k.rt = k.rwt + R * N * B;
    k.gwt = k.rt + R * E * B, k.get = k.gwt + N * B, k.gat = k.get + E * B, k.grwt = k.gat + E * B;
    ops::to_batch_inner(c.x[1], B, 1, N, k.wt);
    ops::to_batch_inner(c.x[2], B, m.rows, m.cols, k.et);
    ops::to_batch_inner(c.x[3], B, m.rows, m.cols, k.at);
    for (std::int64_t r = 0; r < R; ++r) ops::to_batch_inner(c.x[4 + r], B, 1, N, k.rwt + r * N * B);
    return k;
  }

  // The passes over the slots, for RK = R reads fixed at compile time (or kAnyReads), so the read weights
  // stay in registers. With reads, forward takes the slots' elements in blocks of kBlock, each block's
  // reads summed over all slots in registers: the store stream of M' is then the only one.
  // Both passes' lambdas are always inlined (see ops::simd_loop). Out of line, as GCC 12 had left them, each
  // element reloaded the batch stride through the closure after every store (and forward recomputed its
  // prefetch offset from it, backward reloaded its assign flag). Inlined, `bench ops` ran memory_read_write
  // (B = 16, two reads) in 42–43 µs against 51–52, and the ntm-copy step at length 10 ran 1.063× the
  // sequences/s at batch 16 [0.89–1.14] and 1.032× at 64 [0.94–1.13] (10 and 6 alternating rounds).
  static constexpr std::int64_t kBlock = 12;
  template <int RK>
  static void forward_slots(const OpCall<T>& c, const Work& k) {
    const std::int64_t B = k.B, N = k.N, E = k.E, R = RK >= 0 ? RK : k.R;
    const T *mem = c.x[0], *wt = k.wt, *et = k.et, *at = k.at, *rwt = k.rwt;
    T *y = c.y, *rt = k.rt;
    if constexpr (RK == 0) {  // no reads: slot after slot
      for (std::int64_t n = 0; n < N; ++n)
        ops::simd_loop<T>(B, [&](std::int64_t q, auto x) __attribute__((always_inline)) {
          using X = decltype(x);
          const X wv = ops::load<X>(wt + n * B + q);
          for (std::int64_t e = 0; e < E; ++e) {
            const std::int64_t i = e * B + q;
            const X mv = ops::load<X>(mem + n * E * B + i);
            ops::store<X>(y + n * E * B + i, mv + wv * (ops::load<X>(at + i) - mv * ops::load<X>(et + i)));
          }
        });
      return;
    }
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) __attribute__((always_inline)) {
      using X = decltype(x);
      for (std::int64_t e0 = 0; e0 < E; e0 += kBlock) {
        if (RK > 0 && e0 + kBlock <= E) {  // a full block: RK·kBlock sums in registers
          std::array<std::array<X, kBlock>, kReads<RK>> acc{};
          std::array<X, kBlock> eb, ab;  // the block's erase and add lanes, at fixed offsets on the stack
          for (std::int64_t e = 0; e < kBlock; ++e) {
            eb[std::size_t(e)] = ops::load<X>(et + (e0 + e) * B + q);
            ab[std::size_t(e)] = ops::load<X>(at + (e0 + e) * B + q);
          }
          const T* slot = mem + e0 * B + q;
          T* yslot = y + e0 * B + q;
          for (std::int64_t n = 0; n < N; ++n, slot += E * B, yslot += E * B) {
            const X wv = ops::load<X>(wt + n * B + q);
            std::array<X, kReads<RK>> rw;
            for (int r = 0; r < RK; ++r) rw[std::size_t(r)] = ops::load<X>(rwt + (r * N + n) * B + q);
            const T* mp = slot;
            T* yp = yslot;
#pragma GCC unroll 32
            for (std::int64_t e = 0; e < kBlock; ++e, mp += B, yp += B) {
              // Running pointers: with the element stride B known only at run time, precomputed offsets
              // for every e of the unrolled block do not fit the registers and were reloaded from the stack.
              asm("" : "+r"(mp), "+r"(yp));
              ops::prefetch_for_write(yp + ops::kPrefetchSlots * E * B);
              const X mv = ops::load<X>(mp);
              ops::store<X>(yp, mv + wv * (ab[std::size_t(e)] - mv * eb[std::size_t(e)]));
#pragma GCC unroll 4
              for (int r = 0; r < RK; ++r) acc[std::size_t(r)][std::size_t(e)] += rw[std::size_t(r)] * mv;
            }
          }
          for (int r = 0; r < RK; ++r)
            for (std::int64_t e = 0; e < kBlock; ++e)
              ops::store<X>(rt + r * E * B + (e0 + e) * B + q, acc[std::size_t(r)][e]);
        } else {  // a last partial block, or R at run time: sums in rt
          const std::int64_t e1 = std::min(E, e0 + kBlock);
          for (std::int64_t n = 0; n < N; ++n) {
            const X wv = ops::load<X>(wt + n * B + q);
            for (std::int64_t e = e0; e < e1; ++e) {
              const std::int64_t i = e * B + q;
              const X mv = ops::load<X>(mem + n * E * B + i);
              ops::store<X>(y + n * E * B + i, mv + wv * (ops::load<X>(at + i) - mv * ops::load<X>(et + i)));
              for (std::int64_t r = 0; r < R; ++r)
                ops::store<X>(rt + r * E * B + i,
                           ops::load<X>(rt + r * E * B + i) + ops::load<X>(rwt + (r * N + n) * B + q) * mv);
            }
          }
        }
      }
    });
  }
  // Backward takes the slots' elements in blocks of kBlock, as forward does, and walks all the slots for
  // each block: the block's terms of grad_E and grad_A (and its erase, add and read-gradient lanes) stay in
  // registers over the slots, each slot's grad_w and grad_w_k sums over the block are added into scratch
  // once, and grad_M is the only store per slot element. Each slot then gives every stream (the memory,
  // grad_M' and grad_M) a run of kBlock consecutive elements. Against the earlier loop (four slots at a
  // time over all 36 elements, twelve streams), on a 120-slot 6×6 memory at B = 16: a copy of each loop
  // ran 15.5 against 17.1 µs with its buffers in L2 and 47 against 54–57 µs with them in L3 (blocks of 4
  // or 6 were slower out of L2, 18 or 36 spilled registers), and in the ntm-copy training step this op's
  // backward took 0.90 of its time (median of eight alternating profiled runs).
  // EB > 0: a full block of EB elements; EB = kAnyBlock: a last, shorter block of eb elements.
  static constexpr int kAnyBlock = -1;
  // (GCC 12 unrolls the loops over a last block's eb < kBlock elements past the arrays' end in code that
  // never runs and warns about it; the warning is off for this function.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
  template <int RK, int EB>
  static void backward_block(const OpCall<T>& c, const Work& k, std::int64_t e0, std::int64_t eb_run) {
    const std::int64_t B = k.B, N = k.N, E = k.E, R = RK >= 0 ? RK : k.R;
    const std::int64_t eb = EB > 0 ? EB : eb_run;
    constexpr std::size_t kLen = EB > 0 ? std::size_t(EB) : std::size_t(kBlock);
    const T *wt = k.wt, *rwt = k.rwt, *grt = k.rt;
    T *gwt = k.gwt, *grwt = k.grwt;
    T* gm = c.grad_x[0];
    const bool assign_m = c.fresh(0), first = e0 == 0;  // the first block assigns the slot sums
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) __attribute__((always_inline)) {
      using X = decltype(x);
      std::array<X, kLen> ev, av, ge, ga;
      std::array<std::array<X, kLen>, kReads<RK>> gr;
      for (std::int64_t e = 0; e < eb; ++e) {
        const std::int64_t i = (e0 + e) * B + q;
        ev[e] = ops::load<X>(k.et + i);
        av[e] = ops::load<X>(k.at + i);
        ge[e] = X(T(0));
        ga[e] = X(T(0));
        for (std::int64_t r = 0; r < R; ++r) gr[r][e] = ops::load<X>(grt + r * E * B + i);
      }
      const T *mp = c.x[0] + e0 * B + q, *gp = c.grad_y + e0 * B + q;
      T* op = gm ? gm + e0 * B + q : nullptr;
      for (std::int64_t n = 0; n < N; ++n, mp += E * B, gp += E * B) {
        const X wv = ops::load<X>(wt + n * B + q);
        std::array<X, kReads<RK>> rw, racc;
        for (std::int64_t r = 0; r < R; ++r) {
          rw[r] = ops::load<X>(rwt + (r * N + n) * B + q);
          racc[r] = X(T(0));
        }
        X acc(T(0));
#pragma GCC unroll 12
        for (std::int64_t e = 0; e < eb; ++e) {
          const X gv = ops::load<X>(gp + e * B), mv = ops::load<X>(mp + e * B), wg = wv * gv;
          X d = gv - wg * ev[e];
#pragma GCC unroll 4
          for (std::int64_t r = 0; r < R; ++r) {
            d += rw[r] * gr[r][e];
            racc[r] += gr[r][e] * mv;
          }
          if (op) ops::store<X>(op + e * B, assign_m ? d : ops::load<X>(op + e * B) + d);
          acc += gv * (av[e] - mv * ev[e]);
          ge[e] -= wg * mv;
          ga[e] += wg;
        }
        if (op) op += E * B;
        T* gw = gwt + n * B + q;
        ops::store<X>(gw, first ? acc : ops::load<X>(gw) + acc);
        for (std::int64_t r = 0; r < R; ++r) {
          T* grw = grwt + (r * N + n) * B + q;
          ops::store<X>(grw, first ? racc[r] : ops::load<X>(grw) + racc[r]);
        }
      }
      for (std::int64_t e = 0; e < eb; ++e) {
        ops::store<X>(k.get + (e0 + e) * B + q, ge[e]);
        ops::store<X>(k.gat + (e0 + e) * B + q, ga[e]);
      }
    });
  }
#pragma GCC diagnostic pop

#ifdef MATMEM_PERIODIC_LANES
  // Periodic lanes (a batch B < W dividing W, ops/slots.hpp): a slot, E, A, the reads and their gradients
  // are each L = E·B consecutive values, walked in W-wide chunks, the last one masked; w_n and w_k,n are
  // periodic vectors, and grad_w_n and grad_w_k,n (sums along a slot) end in folds. The passes are those
  // above with a chunk in place of an element: forward and backward take a block of JB chunks of every slot
  // at a time (the reads, or E, A, the read gradients and the grad_E and grad_A terms, in registers), the
  // block's last chunk loaded and stored through the mask `last` (all lanes unless it ends the slot).
  using P = ops::Periodic<T>;
  using V = typename P::V;
  using Lanes = typename P::Lanes;
  using Mask = typename P::Mask;
  // Blocks of up to 6 chunks: a 6×6 slot is one block at B = 1 and 2 (3 and 5 chunks), two at 4 (9), three at
  // 8 (18). Backward in blocks of 4 walked the slots twice at B = 2 and took 1.15–1.3 times as long.
  static constexpr int kBlockChunks = 6;
  // f(std::integral_constant<int, J>{}) for J = jb in 1 .. 6.
  template <class F>
  static void with_chunks(std::int64_t jb, F&& f) {
    ops::with_fixed<1, 5>(jb, f, [&] { f(std::integral_constant<int, 6>{}); });
  }
  // Calls block(i0, jb, last, first) for the blocks of at most JB chunks of a slot of L values.
  template <class F>
  static void chunk_blocks(std::int64_t L, std::int64_t JB, F&& block) {
    const std::int64_t J = (L + P::W - 1) / P::W;
    for (std::int64_t j0 = 0; j0 < J; j0 += JB) {
      const std::int64_t jb = std::min(JB, J - j0);
      block(j0 * P::W, jb, j0 + jb == J ? P::first(L - (J - 1) * P::W) : P::kFull, j0 == 0);
    }
  }
  template <int J>
  [[gnu::always_inline]] static V load_chunk(const T* p, int j, Mask last) {
    return j + 1 < J ? P::load(p) : P::load(p, last);
  }
  template <int J>
  [[gnu::always_inline]] static void store_chunk(T* p, const V& v, int j, Mask last) {
    if (j + 1 < J) P::store(p, v);
    else P::store(p, v, last);
  }
  // RK ≥ 1 reads (or kAnyReads): chunks [i0, i0 + J·W) of every slot, the reads' sums in registers (for
  // kAnyReads, in arrays on the stack).
  template <int RK, int J>
  static void forward_block_periodic(const Lanes& ln, const OpCall<T>& c, const Work& k, std::int64_t i0,
                                     Mask last) {
    const std::int64_t B = k.B, N = k.N, L = k.E * k.B;
    const int R = RK >= 0 ? RK : int(k.R);
    std::array<std::array<V, J>, kReads<RK>> acc{};
    std::array<V, J> eb, ab;
    for (int j = 0; j < J; ++j) {
      eb[j] = load_chunk<J>(k.et + i0 + j * P::W, j, last);
      ab[j] = load_chunk<J>(k.at + i0 + j * P::W, j, last);
    }
    const T* mp = c.x[0] + i0;
    T* yp = c.y + i0;
    for (std::int64_t n = 0; n < N; ++n, mp += L, yp += L) {
      const V wv = ln.periodic(k.wt + n * B);
      std::array<V, kReads<RK>> rw;
      for (int r = 0; r < R; ++r) rw[r] = ln.periodic(k.rwt + (r * N + n) * B);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) {
        ops::prefetch_for_write(yp + j * P::W + ops::kPrefetchSlots * L);
        const V mv = load_chunk<J>(mp + j * P::W, j, last);
        store_chunk<J>(yp + j * P::W, mv + wv * (ab[j] - mv * eb[j]), j, last);
        for (int r = 0; r < R; ++r) acc[r][j] += rw[r] * mv;
      }
    }
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < J; ++j) store_chunk<J>(k.rt + r * L + i0 + j * P::W, acc[r][j], j, last);
  }
  template <int RK>
  static void forward_periodic(const OpCall<T>& c, const Work& k) {
    const std::int64_t B = k.B, N = k.N, L = k.E * k.B;
    const Lanes ln(B);
    if constexpr (RK == 0) {  // no reads: slot after slot
      const Mask last = P::first(L - (L - 1) / P::W * P::W);
      for (std::int64_t n = 0; n < N; ++n) {
        const V wv = ln.periodic(k.wt + n * B);
        const T* mp = c.x[0] + n * L;
        T* yp = c.y + n * L;
        std::int64_t i = 0;
        for (; i + P::W < L; i += P::W) {
          ops::prefetch_for_write(yp + i + ops::kPrefetchSlots * L);
          const V mv = P::load(mp + i);
          P::store(yp + i, mv + wv * (P::load(k.at + i) - mv * P::load(k.et + i)));
        }
        const V mv = P::load(mp + i, last);
        P::store(yp + i, mv + wv * (P::load(k.at + i, last) - mv * P::load(k.et + i, last)), last);
      }
    } else {
      chunk_blocks(L, kBlockChunks, [&](std::int64_t i0, std::int64_t jb, Mask last, bool) {
        with_chunks(jb, [&](auto j) { forward_block_periodic<RK, decltype(j)::value>(ln, c, k, i0, last); });
      });
    }
  }
  template <int RK, int J>
  static void backward_block_periodic(const Lanes& ln, const OpCall<T>& c, const Work& k, std::int64_t i0,
                                      Mask last, bool first) {
    const std::int64_t B = k.B, N = k.N, L = k.E * k.B;
    const int R = RK >= 0 ? RK : int(k.R);
    const bool assign_m = c.fresh(0);
    std::array<V, J> ev, av, ge{}, ga{};
    std::array<std::array<V, J>, kReads<RK>> gr;
    for (int j = 0; j < J; ++j) {
      ev[j] = load_chunk<J>(k.et + i0 + j * P::W, j, last);
      av[j] = load_chunk<J>(k.at + i0 + j * P::W, j, last);
      for (int r = 0; r < R; ++r) gr[r][j] = load_chunk<J>(k.rt + r * L + i0 + j * P::W, j, last);
    }
    const T *mp = c.x[0] + i0, *gp = c.grad_y + i0;
    T* op = c.grad_x[0] ? c.grad_x[0] + i0 : nullptr;
    for (std::int64_t n = 0; n < N; ++n, mp += L, gp += L) {
      const V wv = ln.periodic(k.wt + n * B);
      std::array<V, kReads<RK>> rw, racc;
      for (int r = 0; r < R; ++r) {
        rw[r] = ln.periodic(k.rwt + (r * N + n) * B);
        racc[r] = V(T(0));
      }
      V acc(T(0));
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) {
        const V gv = load_chunk<J>(gp + j * P::W, j, last), mv = load_chunk<J>(mp + j * P::W, j, last);
        const V wg = wv * gv;
        V d = gv - wg * ev[j];
        for (int r = 0; r < R; ++r) {
          d += rw[r] * gr[r][j];
          racc[r] += gr[r][j] * mv;
        }
        if (op) store_chunk<J>(op + j * P::W, assign_m ? d : load_chunk<J>(op + j * P::W, j, last) + d, j, last);
        acc += gv * (av[j] - mv * ev[j]);
        ge[j] -= wg * mv;
        ga[j] += wg;
      }
      if (op) op += L;
      ln.fold_store(k.gwt + n * B, acc, !first);
      for (int r = 0; r < R; ++r) ln.fold_store(k.grwt + (r * N + n) * B, racc[r], !first);
    }
    for (int j = 0; j < J; ++j) {
      store_chunk<J>(k.get + i0 + j * P::W, ge[j], j, last);
      store_chunk<J>(k.gat + i0 + j * P::W, ga[j], j, last);
    }
  }
  template <int RK>
  static void backward_periodic(const OpCall<T>& c, const Work& k) {
    const Lanes ln(k.B);
    chunk_blocks(k.E * k.B, kBlockChunks, [&](std::int64_t i0, std::int64_t jb, Mask last, bool first) {
      with_chunks(jb, [&](auto j) { backward_block_periodic<RK, decltype(j)::value>(ln, c, k, i0, last, first); });
    });
  }
#endif
  // Whether this call takes the periodic path: a batch B < W dividing W.
  static bool periodic(const Work& k) { return ops::use_periodic_lanes<T>(k.B); }

  // One forward or backward pass over the slots for RK reads (0: the write alone), on the path of the call's
  // batch: periodic lanes, or lanes over the batch (backward in blocks of kBlock elements).
  template <int RK>
  static void forward_pass(const OpCall<T>& c, const Work& k) {
#ifdef MATMEM_PERIODIC_LANES
    if (periodic(k)) return forward_periodic<RK>(c, k);
#endif
    forward_slots<RK>(c, k);
  }
  template <int RK>
  static void backward_pass(const OpCall<T>& c, const Work& k) {
#ifdef MATMEM_PERIODIC_LANES
    if (periodic(k)) return backward_periodic<RK>(c, k);
#endif
    std::int64_t e0 = 0;
    for (; e0 + kBlock <= k.E; e0 += kBlock) backward_block<RK, int(kBlock)>(c, k, e0, kBlock);
    if (e0 < k.E) backward_block<RK, kAnyBlock>(c, k, e0, k.E - e0);
  }

  static void forward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const Shape& m = c.x_shape[0];
    if (k.B == 1 && k.R > 0) {  // the write's pass, then the reads as GEMMs (reads_by_gemm)
      forward_pass<0>(c, k);
      reads_by_gemm<T>(k.N, k.E, k.R, c.x[0], k.rwt, k.rt);
      for (std::int64_t r = 0; r < k.R; ++r) std::copy_n(k.rt + r * k.E, k.E, c.ys[1 + r]);
      return;
    }
    std::fill_n(k.rt, k.R * k.E * k.B, T(0));
    with_reads(k.R, [&](auto rk) { forward_pass<decltype(rk)::value>(c, k); });
    for (std::int64_t r = 0; r < k.R; ++r)
      ops::from_batch_inner(k.rt + r * k.E * k.B, k.B, m.rows, m.cols, c.ys[1 + r], /*accumulate=*/false);
  }

  static void backward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const std::int64_t B = k.B, N = k.N, E = k.E, R = k.R;
    const Shape& m = c.x_shape[0];
    for (std::int64_t r = 0; r < R; ++r) ops::to_batch_inner(c.grad_ys[1 + r], B, m.rows, m.cols, k.rt + r * E * B);
    if (B == 1 && R > 0) {  // the write's pass first: it assigns grad_M where fresh, the reads' GEMM adds to it
      backward_pass<0>(c, k);
      reads_by_gemm_backward<T>(N, E, R, c.x[0], k.rwt, k.rt, c.grad_x[0], k.grwt, k.grwt + R * N);
    } else {
      with_reads(R, [&](auto rk) { backward_pass<decltype(rk)::value>(c, k); });
    }
    if (T* g = c.grad_x[1]) ops::from_batch_inner(k.gwt, B, 1, N, g, !c.fresh(1));
    if (T* g = c.grad_x[2]) ops::from_batch_inner(k.get, B, m.rows, m.cols, g, !c.fresh(2));
    if (T* g = c.grad_x[3]) ops::from_batch_inner(k.gat, B, m.rows, m.cols, g, !c.fresh(3));
    for (std::int64_t r = 0; r < R; ++r)
      if (T* g = c.grad_x[4 + r]) ops::from_batch_inner(k.grwt + r * N * B, B, 1, N, g, !c.fresh(4 + int(r)));
  }
};

}  // namespace matmem::ops
