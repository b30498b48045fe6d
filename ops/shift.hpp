// Internal: circular shifts over slots without a modulo in the inner loop.
#pragma once
#include <cstdint>

namespace matmem::ops {

// For a shift d, y_i += s w_{(i−d) mod N} splits into two contiguous runs, i < d' and i ≥ d' with
// d' = d mod N, so the inner loops have no modulo and vectorise. f(i0, j0, len) visits y[i0..] and w[j0..].
template <class F>
inline void for_each_run(std::int64_t d, std::int64_t N, F&& f) {
  const std::int64_t dm = ((d % N) + N) % N;
  f(dm, 0, N - dm);          // i = dm..N-1 reads j = 0..N-1-dm
  if (dm) f(0, N - dm, dm);  // i = 0..dm-1 reads j = N-dm..N-1
}

}  // namespace matmem::ops
