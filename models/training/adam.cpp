#include "matmem/models/training/adam.hpp"

#include <cmath>

namespace matmem {

Adam::Adam(ParameterStore& params, AdamOptions options) : options_(options) {
  for (auto& p : params)
    if (!p->buffer)
      state_.push_back({p.get(), Tensor(p->value.dtype(), p->value.shape()), Tensor(p->value.dtype(), p->value.shape()),
                        {}, {}, {}});
  for (State& s : state_) {
    writes_parameter(*s.param, s.value_next);
    writes_state(s.param->name + "/exp_avg", s.exp_avg, s.exp_avg_next);
    writes_state(s.param->name + "/exp_avg_sq", s.exp_avg_sq, s.exp_avg_sq_next);
  }
}

namespace {
// One parameter's update into the next buffers x1, m1, v1 (of the value x, exp_avg m, exp_avg_sq v); false when a
// new value may not be finite. No two arrays overlap (__restrict): GCC then vectorises without overlap checks,
// of which seven arrays need more than it makes.
template <class T>
bool update(std::int64_t n, const T* __restrict x, const T* __restrict g0, const T* __restrict m,
            const T* __restrict v, T* __restrict x1, T* __restrict m1, T* __restrict v1, const AdamOptions& o,
            double step_size, double c2) {
  const T b1 = T(o.beta1), b2 = T(o.beta2), wd = T(o.weight_decay);
  const T step = T(step_size), sc2 = T(std::sqrt(c2)), eps = T(o.eps);
  int bad = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const T g = g0[k] + wd * x[k];
    const T mk = b1 * m[k] + (T(1) - b1) * g;
    const T vk = b2 * v[k] + (T(1) - b2) * g * g;
    const T xk = x[k] - step * mk / (std::sqrt(vk) / sc2 + eps);
    m1[k] = mk;
    v1[k] = vk;
    x1[k] = xk;
    bad |= not_finite(mk) | not_finite(vk) | not_finite(xk);
  }
  return bad == 0;
}
}  // namespace

bool Adam::compute_update() {
  const std::int64_t t = steps_ + 1;
  const AdamOptions& o = options_;
  const double c1 = 1.0 - std::pow(o.beta1, double(t)), c2 = 1.0 - std::pow(o.beta2, double(t));
  bool finite = true;
  for (State& s : state_)
    dispatch(s.param->value.dtype(), [&](auto z) {
      using T = decltype(z);
      finite &= update<T>(s.param->value.numel(), s.param->value.view<T>().data, s.param->grad.view<T>().data,
                          s.exp_avg.view<T>().data, s.exp_avg_sq.view<T>().data, s.value_next.view<T>().data,
                          s.exp_avg_next.view<T>().data, s.exp_avg_sq_next.view<T>().data, o, o.lr * lr_scale_ / c1, c2);
    });
  return finite;
}

}  // namespace matmem
