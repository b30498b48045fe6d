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

// The same expansion for slot after slot of one [B,N] array, one SIMD gather per chunk of B·c: the gather
// indices ((q / c)·N) are computed once. Rows longer than kMaxChunks SIMD chunks fall back to expand_slot.
template <class T>
class SlotExpander {
 public:
  using V = xsimd::batch<T>;
  using I = xsimd::batch<xsimd::as_integer_t<T>>;
  static constexpr std::int64_t W = V::size, kMaxChunks = 32;

  SlotExpander(std::int64_t B, std::int64_t N, std::int64_t c) : B_(B), N_(N), c_(c), chunks_((B * c) / W) {
    if (chunks_ > kMaxChunks) return;
    alignas(64) xsimd::as_integer_t<T> lane[W];
    for (std::int64_t k = 0; k < chunks_; ++k) {
      for (std::int64_t l = 0; l < W; ++l) lane[l] = xsimd::as_integer_t<T>((k * W + l) / c * N);
      index_[k] = I::load_aligned(lane);
    }
  }
  void operator()(const T* v, std::int64_t n, T* e) const {
    if (chunks_ > kMaxChunks) return expand_slot(v, B_, N_, c_, n, e);
    for (std::int64_t k = 0; k < chunks_; ++k) V::gather(v + n, index_[k]).store_unaligned(e + k * W);
    for (std::int64_t q = chunks_ * W; q < B_ * c_; ++q) e[q] = v[q / c_ * N_ + n];
  }

 private:
  std::int64_t B_, N_, c_, chunks_;
  I index_[kMaxChunks];
};

// out[g] = Σ_j s[g·c + j] for g < groups: the totals of consecutive runs of c values (c = a matrix's columns,
// rarely a SIMD width), one SIMD lane per run through gathers, so no scalar dependency chain per run.
template <class T>
inline void run_sums(const T* s, std::int64_t groups, std::int64_t c, T* out) {
  using V = xsimd::batch<T>;
  using I = xsimd::batch<xsimd::as_integer_t<T>>;
  constexpr std::int64_t W = V::size;
  alignas(64) xsimd::as_integer_t<T> lane[W];
  for (std::int64_t l = 0; l < W; ++l) lane[l] = xsimd::as_integer_t<T>(l * c);
  const I index = I::load_aligned(lane);
  std::int64_t g = 0;
  for (; g + W <= groups; g += W) {
    const T* base = s + g * c;
    V acc(T(0));
    for (std::int64_t j = 0; j < c; ++j) acc += V::gather(base + j, index);
    acc.store_unaligned(out + g);
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
