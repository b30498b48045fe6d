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
    std::int64_t B, N, E, R;
    T *wt, *et, *at, *rwt, *rt, *gwt, *get, *gat, *grwt;
  };
  static Work prepare(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    Work k{m.batch, m.slots, m.rows * m.cols, c.arity - 4};
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
            ops::store(y + n * E * B + i, mv + wv * (ops::load<X>(at + i) - mv * ops::load<X>(et + i)));
          }
        });
      return;
    }
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
      using X = decltype(x);
      for (std::int64_t e0 = 0; e0 < E; e0 += kBlock) {
        if (RK > 0 && e0 + kBlock <= E) {  // a full block: RK·kBlock sums in registers
          std::array<std::array<X, kBlock>, kReads<RK>> acc{};
          for (std::int64_t n = 0; n < N; ++n) {
            const X wv = ops::load<X>(wt + n * B + q);
            const T* slot = mem + (n * E + e0) * B + q;
            T* yslot = y + (n * E + e0) * B + q;
#pragma GCC unroll 16
            for (std::int64_t e = 0; e < kBlock; ++e) {
              const X mv = ops::load<X>(slot + e * B);
              const std::int64_t i = (e0 + e) * B + q;
              ops::store(yslot + e * B, mv + wv * (ops::load<X>(at + i) - mv * ops::load<X>(et + i)));
#pragma GCC unroll 4
              for (int r = 0; r < RK; ++r) acc[std::size_t(r)][e] += ops::load<X>(rwt + (r * N + n) * B + q) * mv;
            }
          }
          for (int r = 0; r < RK; ++r)
            for (std::int64_t e = 0; e < kBlock; ++e)
              ops::store(rt + r * E * B + (e0 + e) * B + q, acc[std::size_t(r)][e]);
        } else {  // a last partial block, or R at run time: sums in rt
          const std::int64_t e1 = std::min(E, e0 + kBlock);
          for (std::int64_t n = 0; n < N; ++n) {
            const X wv = ops::load<X>(wt + n * B + q);
            for (std::int64_t e = e0; e < e1; ++e) {
              const std::int64_t i = e * B + q;
              const X mv = ops::load<X>(mem + n * E * B + i);
              ops::store(y + n * E * B + i, mv + wv * (ops::load<X>(at + i) - mv * ops::load<X>(et + i)));
              for (std::int64_t r = 0; r < R; ++r)
                ops::store(rt + r * E * B + i,
                           ops::load<X>(rt + r * E * B + i) + ops::load<X>(rwt + (r * N + n) * B + q) * mv);
            }
          }
        }
      }
    });
  }
  template <int RK>
  static void backward_slots(const OpCall<T>& c, const Work& k) {
    const std::int64_t B = k.B, N = k.N, E = k.E, R = RK >= 0 ? RK : k.R;
    const T *mem = c.x[0], *g = c.grad_y, *wt = k.wt, *et = k.et, *at = k.at, *rwt = k.rwt, *grt = k.rt;
    T *gm = c.grad_x[0], *get = k.get, *gat = k.gat, *gwt = k.gwt, *grwt = k.grwt;
    const bool assign_m = c.fresh(0);
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t s = n * E * B;
      ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
        using X = decltype(x);
        const X wv = ops::load<X>(wt + n * B + q);
        // Independent sums (kChains) each for grad_w and the read weights' gradients.
        std::array<X, kChains> acc{};
        std::array<std::array<X, kReads<RK>>, kChains> racc{};
        std::array<X, kReads<RK>> rw{};
        for (std::int64_t r = 0; r < R; ++r) rw[r] = ops::load<X>(rwt + (r * N + n) * B + q);
        auto element = [&](std::int64_t e, int u) {
          const std::int64_t i = e * B + q;
          const X gv = ops::load<X>(g + s + i), mv = ops::load<X>(mem + s + i), ev = ops::load<X>(et + i);
          X d = gv * (X(T(1)) - wv * ev);
          for (std::int64_t r = 0; r < R; ++r) {
            const X gr = ops::load<X>(grt + r * E * B + i);
            d += rw[r] * gr;
            racc[u][r] += gr * mv;
          }
          if (gm) ops::store(gm + s + i, assign_m ? d : ops::load<X>(gm + s + i) + d);
          acc[u] += gv * (ops::load<X>(at + i) - mv * ev);
          const X wg = wv * gv;
          ops::store(get + i, ops::load<X>(get + i) - wg * mv);
          ops::store(gat + i, ops::load<X>(gat + i) + wg);
        };
        ops::for_each_chained(E, element);
        for (int u = 1; u < kChains; ++u) {
          acc[0] += acc[u];
          for (std::int64_t r = 0; r < R; ++r) racc[0][r] += racc[u][r];
        }
        ops::store(gwt + n * B + q, acc[0]);
        for (std::int64_t r = 0; r < R; ++r) ops::store(grwt + (r * N + n) * B + q, racc[0][r]);
      });
    }
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
    with_reads(R, [&](auto rk) { backward_slots<decltype(rk)::value>(c, k); });
    if (T* g = c.grad_x[1]) ops::from_batch_inner(k.gwt, B, 1, N, g, !c.fresh(1));
    if (T* g = c.grad_x[2]) ops::from_batch_inner(k.get, B, m.rows, m.cols, g, !c.fresh(2));
    if (T* g = c.grad_x[3]) ops::from_batch_inner(k.gat, B, m.rows, m.cols, g, !c.fresh(3));
    for (std::int64_t r = 0; r < R; ++r)
      if (T* g = c.grad_x[4 + r]) ops::from_batch_inner(k.grwt + r * N * B, B, 1, N, g, !c.fresh(4 + int(r)));
  }
};

}  // namespace matmem::ops
