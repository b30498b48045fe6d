// Internal: vectorised transcendental functions over arrays, through xsimd (the SIMD layer under
// xtensor). Each runs SIMD chunks, the last one padded; the op tests check them by gradcheck at sizes
// that are not multiples of any SIMD width and by float32 against float64 on the same inputs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace matmem::ops::simd {

// The last, partial chunk of a row: lanes [0, r) of x with 0 < r < W, the others `fill`, read without
// touching memory past x[r) (AVX-512: one masked load; otherwise through a padded copy), and its store of
// lanes [0, r) only. The fill lets a reduction ignore the padding (0 for sums, -Inf before exp, a value of
// the row for max) and keeps functions of it finite (1 for log). A scalar loop over the tail costs more
// than the whole-chunk work: rows of 120 slots leave 8 of them per row.
template <class T>
inline xsimd::batch<T> load_tail(const T* x, std::int64_t r, T fill) {
  using B = xsimd::batch<T>;
#if XSIMD_WITH_AVX512F
  if constexpr (sizeof(B) == 64 && std::is_same_v<T, float>)
    return B(_mm512_mask_loadu_ps(_mm512_set1_ps(fill), __mmask16((1u << r) - 1), x));
  if constexpr (sizeof(B) == 64 && std::is_same_v<T, double>)
    return B(_mm512_mask_loadu_pd(_mm512_set1_pd(fill), __mmask8((1u << r) - 1), x));
#endif
  alignas(64) T tmp[B::size];
  std::fill_n(tmp, B::size, fill);
  std::copy(x, x + r, tmp);
  return B::load_aligned(tmp);
}
template <class T>
inline void store_tail(xsimd::batch<T> v, T* y, std::int64_t r) {
  using B = xsimd::batch<T>;
#if XSIMD_WITH_AVX512F
  if constexpr (sizeof(B) == 64 && std::is_same_v<T, float>)
    return _mm512_mask_storeu_ps(y, __mmask16((1u << r) - 1), v);
  if constexpr (sizeof(B) == 64 && std::is_same_v<T, double>)
    return _mm512_mask_storeu_pd(y, __mmask8((1u << r) - 1), v);
#endif
  alignas(64) T tmp[B::size];
  v.store_aligned(tmp);
  std::copy(tmp, tmp + r, y);
}
// Chunk k of a row of n (k < n, k a multiple of W): whole, or its tail as above.
template <class T>
inline xsimd::batch<T> load_chunk(const T* x, std::int64_t k, std::int64_t n, T fill) {
  using B = xsimd::batch<T>;
  return k + std::int64_t(B::size) <= n ? B::load_unaligned(x + k) : load_tail(x + k, n - k, fill);
}
template <class T>
inline void store_chunk(xsimd::batch<T> v, T* y, std::int64_t k, std::int64_t n) {
  using B = xsimd::batch<T>;
  if (k + std::int64_t(B::size) <= n)
    v.store_unaligned(y + k);
  else
    store_tail(v, y + k, n - k);
}
// The largest lane.
template <class T>
inline T hmax(xsimd::batch<T> v) {
  using B = xsimd::batch<T>;
#if XSIMD_WITH_AVX512F
  if constexpr (sizeof(B) == 64 && std::is_same_v<T, float>) return _mm512_reduce_max_ps(v);
  if constexpr (sizeof(B) == 64 && std::is_same_v<T, double>) return _mm512_reduce_max_pd(v);
#endif
  alignas(64) T lanes[B::size];
  v.store_aligned(lanes);
  return *std::max_element(lanes, lanes + B::size);
}

// y[k] = f(x[k]) with a batch function fb, the tail padded with ones (finite under every function here).
template <class T, class FB>
inline void map(const T* x, T* y, std::int64_t n, FB fb) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  std::int64_t k = 0;
  for (; k + W <= n; k += W) fb(B::load_unaligned(x + k)).store_unaligned(y + k);
  if (k < n) store_tail(fb(load_tail(x + k, n - k, T(1))), y + k, n - k);
}

template <class T>
inline void exp(const T* x, T* y, std::int64_t n) {
  map(x, y, n, [](auto v) { return xsimd::exp(v); });
}
template <class T>
inline void log(const T* x, T* y, std::int64_t n) {
  map(x, y, n, [](auto v) { return xsimd::log(v); });
}
template <class T>
inline void tanh(const T* x, T* y, std::int64_t n) {
  map(x, y, n, [](auto v) { return xsimd::tanh(v); });
}
// 1 / (1 + e^-x): e^-x overflows to +Inf for very negative x, giving exactly 0, never NaN.
template <class T>
inline void sigmoid(const T* x, T* y, std::int64_t n) {
  map(x, y, n, [](auto v) { return decltype(v)(T(1)) / (decltype(v)(T(1)) + xsimd::exp(-v)); });
}
// max(x, 0) + log1p(e^-|x|): exact and finite for every x.
template <class T>
inline void softplus(const T* x, T* y, std::int64_t n) {
  map(x, y, n, [](auto v) { return xsimd::max(v, decltype(v)(T(0))) + xsimd::log1p(xsimd::exp(-xsimd::abs(v))); });
}

// Reductions. A scalar loop `s += x[k]` is one dependency chain (a few cycles per element, and GCC may not
// reorder float sums); these keep one SIMD accumulator and reduce it at the end.
template <class T>
inline T sum(const T* x, std::int64_t n) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  B acc(T(0));
  std::int64_t k = 0;
  for (; k + W <= n; k += W) acc += B::load_unaligned(x + k);
  if (k < n) acc += load_tail(x + k, n - k, T(0));
  return xsimd::hadd(acc);
}
template <class T>
inline T dot(const T* x, const T* y, std::int64_t n) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  B acc(T(0));
  std::int64_t k = 0;
  for (; k + W <= n; k += W) acc = xsimd::fma(B::load_unaligned(x + k), B::load_unaligned(y + k), acc);
  if (k < n) acc = xsimd::fma(load_tail(x + k, n - k, T(0)), load_tail(y + k, n - k, T(0)), acc);
  return xsimd::hadd(acc);
}
template <class T>
inline T max(const T* x, std::int64_t n) {  // n ≥ 1; the tail is padded with x[0]
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  B acc(x[0]);
  std::int64_t k = 0;
  for (; k + W <= n; k += W) acc = xsimd::max(acc, B::load_unaligned(x + k));
  if (k < n) acc = xsimd::max(acc, load_tail(x + k, n - k, x[0]));
  return hmax(acc);
}
// y[k] *= a
template <class T>
inline void scale(T* y, T a, std::int64_t n) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  std::int64_t k = 0;
  for (; k + W <= n; k += W) (B::load_unaligned(y + k) * B(a)).store_unaligned(y + k);
  if (k < n) store_tail(load_tail(y + k, n - k, T(0)) * B(a), y + k, n - k);
}

// y = softmax(x) over n values, the maximum m subtracted first (x and y may be the same array): one pass
// for m, one for y = e^(x − m) and its sum (the tail padded with −Inf, whose exp is 0), one to normalise.
template <class T>
inline void softmax(const T* x, T* y, std::int64_t n) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  const B m(max(x, n));
  B acc(T(0));
  for (std::int64_t k = 0; k < n; k += W) {
    const B e = xsimd::exp(load_chunk(x, k, n, -std::numeric_limits<T>::infinity()) - m);
    store_chunk(e, y, k, n);
    acc += e;
  }
  scale(y, T(1) / xsimd::hadd(acc), n);
}
// The softmax's backward for its output y and upstream gradient g: du = y ⊙ (g − <g, y>), written to du
// (which may be g) or, with accumulate, added to it.
template <class T>
inline void softmax_backward(const T* y, const T* g, std::int64_t n, T* du, bool accumulate = false) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  const B d(dot(g, y, n));
  for (std::int64_t k = 0; k < n; k += W) {
    B v = load_chunk(y, k, n, T(0)) * (load_chunk(g, k, n, T(0)) - d);
    if (accumulate) v += load_chunk(du, k, n, T(0));
    store_chunk(v, du, k, n);
  }
}

// Calls f(k, tmp, m) over chunks of at most kChunk elements, with tmp[0..m) = sigmoid(x[k..k+m)).
constexpr std::int64_t kChunk = 256;
template <class T, class F>
inline void sigmoid_chunks(const T* x, std::int64_t n, F&& f) {
  alignas(64) T tmp[kChunk];
  for (std::int64_t k = 0; k < n; k += kChunk) {
    const std::int64_t m = std::min(kChunk, n - k);
    sigmoid(x + k, tmp, m);
    f(k, tmp, m);
  }
}

}  // namespace matmem::ops::simd
