// Parameter initialisation (spec/models.md, "Initialisation"):
//   glorot_uniform: U:[r,r'] ~ U(-a, a), a = √(6 / (r + r')), the matrix's own two sizes;
//   normal: N(mean, stddev²);  constant: every element the same (biases 0, the LSTM forget gate 1);
//   identity: scale on the leading diagonal of each matrix, 0 elsewhere (the IRNN's recurrence, Le et al. 2015).
#pragma once
#include "matmem/autodiff/parameters.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem {

void glorot_uniform(Parameter& p, Rng& rng);
void init_normal(Parameter& p, Rng& rng, double mean, double stddev);
void init_constant(Parameter& p, double value);
void init_identity(Parameter& p, double scale);

}  // namespace matmem
