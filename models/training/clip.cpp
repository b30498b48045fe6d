#include "matmem/models/training/clip.hpp"

#include <algorithm>
#include <cmath>

namespace matmem {

void clip_by_value(ParameterStore& params, double c) {
  for (auto& p : params) {
    if (p->buffer) continue;  // not learned: no gradient
    dispatch(p->grad.dtype(), [&](auto z) {
      using T = decltype(z);
      for (T& g : p->grad.view<T>()) g = std::clamp(g, T(-c), T(c));
    });
  }
}

double gradient_norm(const ParameterStore& params) {
  double total = 0;
  for (const auto& p : params) {
    if (p->buffer) continue;
    dispatch(p->grad.dtype(), [&](auto z) {
      using T = decltype(z);
      for (T g : p->grad.view<T>()) total += double(g) * double(g);
    });
  }
  return std::sqrt(total);
}

void scale_gradients(ParameterStore& params, double s) {
  for (auto& p : params) {
    if (p->buffer) continue;
    dispatch(p->grad.dtype(), [&](auto z) {
      using T = decltype(z);
      for (T& g : p->grad.view<T>()) g = T(double(g) * s);
    });
  }
}

double clip_by_global_norm(ParameterStore& params, double c) {
  const double n = gradient_norm(params);
  if (n > c) scale_gradients(params, c / n);
  return n;
}

}  // namespace matmem
