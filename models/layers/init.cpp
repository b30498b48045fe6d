#include "matmem/models/layers/init.hpp"

#include <algorithm>
#include <cmath>

namespace matmem {

void glorot_uniform(Parameter& p, Rng& rng) {
  const Shape& s = p.value.shape();
  const double a = std::sqrt(6.0 / double(s.rows + s.cols));
  for (std::int64_t k = 0; k < p.value.numel(); ++k) p.value.set(k, rng.uniform(-a, a));
}

void init_normal(Parameter& p, Rng& rng, double mean, double stddev) {
  for (std::int64_t k = 0; k < p.value.numel(); ++k) p.value.set(k, rng.normal(mean, stddev));
}

void init_constant(Parameter& p, double value) { p.value.fill(value); }

void init_identity(Parameter& p, double scale) {
  const Shape& s = p.value.shape();
  p.value.fill(0.0);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t n = 0; n < s.slots; ++n)
      for (std::int64_t i = 0; i < std::min(s.rows, s.cols); ++i) p.value.set(s.offset(b, n, i, i), scale);
}

}  // namespace matmem
