// Gradient clipping over a ParameterStore.
//   by value:       g ← min(max(g, −c), c) elementwise (the NTM's usual ±10);
//   by global norm: n = √(Σ over every parameter of Σ g²); if n > c, g ← g · c / n.
#pragma once
#include "matmem/autodiff/parameters.hpp"

namespace matmem {

void clip_by_value(ParameterStore& params, double c);
// g ← s·g for every learned parameter.
void scale_gradients(ParameterStore& params, double s);
// Returns the norm before clipping.
double clip_by_global_norm(ParameterStore& params, double c);
// The global gradient norm (NaN or Inf when any gradient is not finite).
double gradient_norm(const ParameterStore& params);

}  // namespace matmem
