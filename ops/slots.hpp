// Internal: helpers for ops over memories [B,N,r,c]. In matmem's layout (runtime/shape.hpp) row i of every
// batch item of slot n is one contiguous run of B·c elements, q = b·c + j. A per-(b, n) scalar such as a
// weighting w[b,n] is expanded for one slot at a time to e[q] = w[b,n] (B·c values, in L1), after which
// every loop over a slot row is an elementwise loop of length B·c, run by simd_loop in SIMD chunks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace matmem::ops {

// e[b·c + j] = v[b·N + n]  (v: [B,N], e: B·c)
template <class T>
inline void expand_slot(const T* v, std::int64_t B, std::int64_t N, std::int64_t c, std::int64_t n, T* e) {
  for (std::int64_t b = 0; b < B; ++b) std::fill_n(e + b * c, c, v[b * N + n]);
}

// out[g] = Σ_j s[g·c + j] for g < groups: the totals of consecutive runs of c values (c = a matrix's
// columns). Scalar on purpose: c is rarely a SIMD width, and SIMD gathers are slow on CPUs with the
// gather-data-sampling mitigation (measured slower than this loop on the reference machine).
template <class T>
inline void run_sums(const T* s, std::int64_t groups, std::int64_t c, T* out) {
  std::int64_t g = 0;
  for (; g + 8 <= groups; g += 8) {  // eight runs at once: eight independent add chains
    const T* p = s + g * c;
    T t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0, t6 = 0, t7 = 0;
    for (std::int64_t j = 0; j < c; ++j) {
      t0 += p[j];
      t1 += p[c + j];
      t2 += p[2 * c + j];
      t3 += p[3 * c + j];
      t4 += p[4 * c + j];
      t5 += p[5 * c + j];
      t6 += p[6 * c + j];
      t7 += p[7 * c + j];
    }
    out[g] = t0, out[g + 1] = t1, out[g + 2] = t2, out[g + 3] = t3;
    out[g + 4] = t4, out[g + 5] = t5, out[g + 6] = t6, out[g + 7] = t7;
  }
  for (; g < groups; ++g) {
    T t = 0;
    for (std::int64_t j = 0; j < c; ++j) t += s[g * c + j];
    out[g] = t;
  }
}

// out[b·N + n] += Σ_j acc[b·c + j]  (acc: one slot's B·c partial sums; tmp: B values of scratch)
template <class T>
inline void reduce_to_slot(const T* acc, std::int64_t B, std::int64_t N, std::int64_t c, std::int64_t n, T* out,
                           T* tmp) {
  run_sums(acc, B, c, tmp);
  for (std::int64_t b = 0; b < B; ++b) out[b * N + n] += tmp[b];
}

// simd_loop<T>(n, f) calls f(q, X{}) over [0, n): X = xsimd::batch<T> on full chunks, then X = T on the tail,
// so one generic body (using load<X> / store) serves both.
template <class T, class F>
inline void simd_loop(std::int64_t n, F&& f) {
  using V = xsimd::batch<T>;
  std::int64_t q = 0;
  for (; q + std::int64_t(V::size) <= n; q += V::size) f(q, V{});
  for (; q < n; ++q) f(q, T{});
}
template <class X, class T>
inline X load(const T* p) {
  if constexpr (std::is_same_v<X, T>) return *p;
  else return X::load_unaligned(p);
}
template <class X, class T>
inline void store(T* p, const X& v) {
  if constexpr (std::is_same_v<X, T>) *p = v;
  else v.store_unaligned(p);
}

}  // namespace matmem::ops
