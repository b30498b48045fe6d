// Internal: helpers for ops over memories [B,N,r,c]. In matmem's layout (runtime/shape.hpp) row i of every
// batch item of slot n is one contiguous run of B·c elements, q = b·c + j. A per-(b, n) scalar such as a
// weighting w[b,n] is expanded once to ew[n·B·c + q] = w[b,n], after which every loop over a slot row is a
// plain elementwise loop of length B·c that the compiler vectorises.
#pragma once
#include <cstdint>

namespace matmem::ops {

// ew[n][b·c + j] = w[b·N + n]  (w: [B,N], ew: N × B·c)
template <class T>
inline void expand_per_slot(const T* w, std::int64_t B, std::int64_t N, std::int64_t c, T* ew) {
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t b = 0; b < B; ++b) {
      const T v = w[b * N + n];
      T* out = ew + (n * B + b) * c;
      for (std::int64_t j = 0; j < c; ++j) out[j] = v;
    }
}

// out[b·N + n] += Σ_j acc[b·c + j]  (acc: one slot's B·c partial sums)
template <class T>
inline void reduce_to_slot(const T* acc, std::int64_t B, std::int64_t N, std::int64_t c, std::int64_t n, T* out) {
  for (std::int64_t b = 0; b < B; ++b) {
    T s = 0;
    for (std::int64_t j = 0; j < c; ++j) s += acc[b * c + j];
    out[b * N + n] += s;
  }
}

}  // namespace matmem::ops
