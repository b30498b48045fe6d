// Internal: vectorised transcendental functions over arrays, through xsimd (the SIMD layer under
// xtensor). Each runs SIMD chunks, the last one padded; the op tests check them by gradcheck at sizes
// that are not multiples of any SIMD width and by float32 against float64 on the same inputs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <xsimd/xsimd.hpp>

namespace matmem::ops::simd {

// y[k] = f(x[k]) with a batch function fb. The last partial chunk runs through fb too, on a copy padded
// with ones (finite under every function here): a scalar libm call costs as much as a whole SIMD chunk,
// and rows of 120 slots leave 8 of them per row.
template <class T, class FB>
inline void map(const T* x, T* y, std::int64_t n, FB fb) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  std::int64_t k = 0;
  for (; k + W <= n; k += W) fb(B::load_unaligned(x + k)).store_unaligned(y + k);
  if (k < n) {
    alignas(64) T tail[W];
    std::fill_n(tail, W, T(1));
    std::copy(x + k, x + n, tail);
    fb(B::load_aligned(tail)).store_aligned(tail);
    std::copy(tail, tail + (n - k), y + k);
  }
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
  T s = xsimd::hadd(acc);
  for (; k < n; ++k) s += x[k];
  return s;
}
template <class T>
inline T dot(const T* x, const T* y, std::int64_t n) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  B acc(T(0));
  std::int64_t k = 0;
  for (; k + W <= n; k += W) acc = xsimd::fma(B::load_unaligned(x + k), B::load_unaligned(y + k), acc);
  T s = xsimd::hadd(acc);
  for (; k < n; ++k) s += x[k] * y[k];
  return s;
}
template <class T>
inline T max(const T* x, std::int64_t n) {  // n ≥ 1
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  std::int64_t k = 0;
  T m = x[0];
  if (n >= W) {
    B acc = B::load_unaligned(x);
    for (k = W; k + W <= n; k += W) acc = xsimd::max(acc, B::load_unaligned(x + k));
    alignas(64) T lanes[W];
    acc.store_aligned(lanes);
    m = *std::max_element(lanes, lanes + W);
  }
  for (; k < n; ++k) m = std::max(m, x[k]);
  return m;
}
// y[k] *= a
template <class T>
inline void scale(T* y, T a, std::int64_t n) {
  using B = xsimd::batch<T>;
  constexpr std::int64_t W = B::size;
  std::int64_t k = 0;
  for (; k + W <= n; k += W) (B::load_unaligned(y + k) * B(a)).store_unaligned(y + k);
  for (; k < n; ++k) y[k] *= a;
}

// y = softmax(x) over n values, the maximum subtracted first (x and y may be the same array).
template <class T>
inline void softmax(const T* x, T* y, std::int64_t n) {
  const T m = max(x, n);
  for (std::int64_t k = 0; k < n; ++k) y[k] = x[k] - m;
  exp(y, y, n);
  scale(y, T(1) / sum(y, n), n);
}
// The softmax's backward for its output y and upstream gradient g: du = y ⊙ (g − <g, y>), written to du
// (which may be g) or, with accumulate, added to it.
template <class T>
inline void softmax_backward(const T* y, const T* g, std::int64_t n, T* du, bool accumulate = false) {
  const T d = dot(g, y, n);
  if (accumulate)
    for (std::int64_t k = 0; k < n; ++k) du[k] += y[k] * (g[k] - d);
  else
    for (std::int64_t k = 0; k < n; ++k) du[k] = y[k] * (g[k] - d);
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
