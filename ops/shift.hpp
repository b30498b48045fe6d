// Internal: circular shifts over slots without a modulo in the inner loop.
#pragma once
#include <cstdint>

#include "matmem/ops/simd.hpp"

namespace matmem::ops {

// For a shift d, y_i += s w_{(i−d) mod N} splits into two contiguous runs, i < d' and i ≥ d' with
// d' = d mod N, so the inner loops have no modulo and vectorise. f(i0, j0, len) visits y[i0..] and w[j0..].
template <class F>
inline void for_each_run(std::int64_t d, std::int64_t N, F&& f) {
  const std::int64_t dm = ((d % N) + N) % N;
  f(dm, 0, N - dm);          // i = dm..N-1 reads j = 0..N-1-dm
  if (dm) f(0, N - dm, dm);  // i = 0..dm-1 reads j = N-dm..N-1
}

// One row of circular_shift, y_i += Σ_k s_k w_(i−(k−S)) mod N with K = 2S + 1 shift weights (y added to).
template <class T>
inline void shift_row(const T* w, const T* s, std::int64_t K, std::int64_t N, T* y) {
  for (std::int64_t k = 0; k < K; ++k)
    for_each_run(k - K / 2, N, [&](std::int64_t i0, std::int64_t j0, std::int64_t len) {
      for (std::int64_t q = 0; q < len; ++q) y[i0 + q] += s[k] * w[j0 + q];
    });
}
// Its backward for upstream g: gw (if given) += the shift of g the other way, gs_k (if given) += Σ_i w_… g_i.
template <class T>
inline void shift_row_backward(const T* w, const T* s, const T* g, std::int64_t K, std::int64_t N, T* gw, T* gs) {
  for (std::int64_t k = 0; k < K; ++k)
    for_each_run(k - K / 2, N, [&](std::int64_t i0, std::int64_t j0, std::int64_t len) {
      if (gw)
        for (std::int64_t q = 0; q < len; ++q) gw[j0 + q] += s[k] * g[i0 + q];
      if (gs) gs[k] += simd::dot(w + j0, g + i0, len);
    });
}

}  // namespace matmem::ops
