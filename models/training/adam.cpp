#include "matmem/models/training/adam.hpp"

#include <cmath>

namespace matmem {

Adam::Adam(ParameterStore& params, AdamOptions options) : options_(options) {
  for (auto& p : params)
    if (!p->buffer)
    state_.push_back({p.get(), Tensor(p->value.dtype(), p->value.shape()), Tensor(p->value.dtype(), p->value.shape())});
}

std::map<std::string, Tensor*> Adam::state_tensors() {
  std::map<std::string, Tensor*> out;
  for (State& s : state_) {
    out[s.param->name + "/exp_avg"] = &s.exp_avg;
    out[s.param->name + "/exp_avg_sq"] = &s.exp_avg_sq;
  }
  return out;
}

void Adam::step() {
  ++steps_;
  const AdamOptions& o = options_;
  const double c1 = 1.0 - std::pow(o.beta1, double(steps_)), c2 = 1.0 - std::pow(o.beta2, double(steps_));
  for (State& s : state_)
    dispatch(s.param->value.dtype(), [&](auto z) {
      using T = decltype(z);
      T* x = s.param->value.view<T>().data;
      const T* g0 = s.param->grad.view<T>().data;
      T *m = s.exp_avg.view<T>().data, *v = s.exp_avg_sq.view<T>().data;
      const T b1 = T(o.beta1), b2 = T(o.beta2), wd = T(o.weight_decay);
      const T step = T(o.lr * lr_scale_ / c1), sc2 = T(std::sqrt(c2)), eps = T(o.eps);
      for (std::int64_t k = 0; k < s.param->value.numel(); ++k) {
        const T g = g0[k] + wd * x[k];
        m[k] = b1 * m[k] + (T(1) - b1) * g;
        v[k] = b2 * v[k] + (T(1) - b2) * g * g;
        x[k] -= step * m[k] / (std::sqrt(v[k]) / sc2 + eps);
      }
    });
}

}  // namespace matmem
