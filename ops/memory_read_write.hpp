// Internal: the kernel of memory_write and memory_read_write (the math is in ops/memory_read_write.cpp):
// inputs M, w, E, A, then R read weightings (R = 0 for memory_write); outputs M' and the R reads.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "autodiff/tape.hpp"
#include "ops/slots.hpp"

namespace matmem::ops {

// scratch: w [N·B], E, A [r·c·B], the read weightings [R·N·B], the reads (forward) or their gradients
// (backward) [R·r·c·B], all transposed; backward also grad_w [N·B], grad_E, grad_A [r·c·B], grad_w_k [R·N·B].
inline std::int64_t memory_read_write_scratch(std::int64_t R, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
  return 2 * (N * B + 2 * E * B + R * N * B) + R * E * B;
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
    switch (R) {
      case 0: return f(std::integral_constant<int, 0>{});
      case 1: return f(std::integral_constant<int, 1>{});
      case 2: return f(std::integral_constant<int, 2>{});
      default: return f(std::integral_constant<int, kAnyReads>{});
    }
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
  static constexpr std::int64_t kBlock = 12;
  template <int RK>
  static void forward_slots(const OpCall<T>& c, const Work& k) {
    const std::int64_t B = k.B, N = k.N, E = k.E, R = RK >= 0 ? RK : k.R;
    const T *mem = c.x[0], *wt = k.wt, *et = k.et, *at = k.at, *rwt = k.rwt;
    T *y = c.y, *rt = k.rt;
    if constexpr (RK == 0) {  // no reads: slot after slot
      for (std::int64_t n = 0; n < N; ++n)
        ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
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
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
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
  // Backward takes the slots in groups of kSlotGroup (ops::for_each_slot_group): for each element e the
  // group's terms of grad_E and grad_A are summed in registers and stored once, so the only store per slot
  // element is grad_M's. (One slot at a time, the three stores per element held up the store buffer behind
  // the misses of grad_M's stream and ran 2-3x slower.)
  template <int RK, int S>
  static void backward_group(const OpCall<T>& c, const Work& k, std::int64_t n0) {
    const std::int64_t B = k.B, N = k.N, E = k.E, R = RK >= 0 ? RK : k.R;
    const T *mem = c.x[0] + n0 * E * B, *g = c.grad_y + n0 * E * B, *et = k.et, *at = k.at, *grt = k.rt;
    const T *wt = k.wt + n0 * B, *rwt = k.rwt + n0 * B;
    T *gm = c.grad_x[0] ? c.grad_x[0] + n0 * E * B : nullptr, *get = k.get, *gat = k.gat;
    T *gwt = k.gwt + n0 * B, *grwt = k.grwt + n0 * B;
    const bool assign_m = c.fresh(0);
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
      using X = decltype(x);
      std::array<X, S> wv, acc{};
      std::array<std::array<X, kReads<RK>>, S> rw{}, racc{};
      for (int u = 0; u < S; ++u) {
        wv[u] = ops::load<X>(wt + u * B + q);
        for (std::int64_t r = 0; r < R; ++r) rw[u][r] = ops::load<X>(rwt + (r * N + u) * B + q);
      }
      for (std::int64_t e = 0; e < E; ++e) {
        const std::int64_t i = e * B + q;
        const X ev = ops::load<X>(et + i), av = ops::load<X>(at + i);
        std::array<X, kReads<RK>> gr{};
        for (std::int64_t r = 0; r < R; ++r) gr[r] = ops::load<X>(grt + r * E * B + i);
        X ge = ops::load<X>(get + i), ga = ops::load<X>(gat + i);
#pragma GCC unroll 8
        for (int u = 0; u < S; ++u) {
          const std::int64_t s = u * E * B + i;
          const X gv = ops::load<X>(g + s), mv = ops::load<X>(mem + s), wg = wv[u] * gv;
          X d = gv - wg * ev;
          for (std::int64_t r = 0; r < R; ++r) {
            d += rw[u][r] * gr[r];
            racc[u][r] += gr[r] * mv;
          }
          if (gm) ops::store<X>(gm + s, assign_m ? d : ops::load<X>(gm + s) + d);
          acc[u] += gv * (av - mv * ev);
          ge -= wg * mv;
          ga += wg;
        }
        ops::store<X>(get + i, ge);
        ops::store<X>(gat + i, ga);
      }
      for (int u = 0; u < S; ++u) {
        ops::store<X>(gwt + u * B + q, acc[u]);
        for (std::int64_t r = 0; r < R; ++r) ops::store<X>(grwt + (r * N + u) * B + q, racc[u][r]);
      }
    });
  }

  static void forward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const Shape& m = c.x_shape[0];
    std::fill_n(k.rt, k.R * k.E * k.B, T(0));
    with_reads(k.R, [&](auto rk) { forward_slots<decltype(rk)::value>(c, k); });
    for (std::int64_t r = 0; r < k.R; ++r)
      ops::from_batch_inner(k.rt + r * k.E * k.B, k.B, m.rows, m.cols, c.ys[1 + r], /*accumulate=*/false);
  }

  static void backward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const std::int64_t B = k.B, N = k.N, E = k.E, R = k.R;
    const Shape& m = c.x_shape[0];
    for (std::int64_t r = 0; r < R; ++r) ops::to_batch_inner(c.grad_ys[1 + r], B, m.rows, m.cols, k.rt + r * E * B);
    std::fill_n(k.get, 2 * E * B, T(0));
    with_reads(R, [&](auto rk) {
      ops::for_each_slot_group(N, [&](std::int64_t n0, auto s) {
        backward_group<decltype(rk)::value, decltype(s)::value>(c, k, n0);
      });
    });
    if (T* g = c.grad_x[1]) ops::from_batch_inner(k.gwt, B, 1, N, g, !c.fresh(1));
    if (T* g = c.grad_x[2]) ops::from_batch_inner(k.get, B, m.rows, m.cols, g, !c.fresh(2));
    if (T* g = c.grad_x[3]) ops::from_batch_inner(k.gat, B, m.rows, m.cols, g, !c.fresh(3));
    for (std::int64_t r = 0; r < R; ++r)
      if (T* g = c.grad_x[4 + r]) ops::from_batch_inner(k.grwt + r * N * B, B, 1, N, g, !c.fresh(4 + int(r)));
  }
};

}  // namespace matmem::ops
