#include "matmem/models/training/adam.hpp"

#include <cmath>

namespace matmem {

Adam::Adam(ParameterStore& params, AdamOptions options, UpdateMode mode) : Optimizer(mode), options_(options) {
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
// One value's update (the header's math): x, m, v (the value, exp_avg, exp_avg_sq) become the new ones; `bad`
// flags a new value that is not finite. Both loops call it: the whole and in-place updates are the same
// arithmetic.
template <class T>
struct Rule {
  T b1, b2, wd, step, sc2, eps;
  Rule(const AdamOptions& o, double step_size, double c2)
      : b1(T(o.beta1)), b2(T(o.beta2)), wd(T(o.weight_decay)), step(T(step_size)), sc2(T(std::sqrt(c2))),
        eps(T(o.eps)) {}
  [[gnu::always_inline]] void operator()(T& x, T g0, T& m, T& v, int& bad) const {
    const T g = g0 + wd * x;
    const T mk = b1 * m + (T(1) - b1) * g;
    const T vk = b2 * v + (T(1) - b2) * g * g;
    const T xk = x - step * mk / (std::sqrt(vk) / sc2 + eps);
    m = mk;
    v = vk;
    x = xk;
    bad |= not_finite(mk) | not_finite(vk) | not_finite(xk);
  }
};

// One parameter's update, into the next buffers x1, m1, v1 of x, m, v, or InPlace over x, m, v (x1, m1, v1
// null); false when a new value may not be finite. No two arrays overlap (__restrict): GCC then vectorises without
// overlap checks, of which seven arrays need more than it makes.
template <bool InPlace, class T>
bool update(std::int64_t n, T* __restrict x, const T* __restrict g0, T* __restrict m, T* __restrict v,
            T* __restrict x1, T* __restrict m1, T* __restrict v1, const Rule<T>& rule) {
  int bad = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    T xk = x[k], mk = m[k], vk = v[k];
    rule(xk, g0[k], mk, vk, bad);
    (InPlace ? m : m1)[k] = mk;
    (InPlace ? v : v1)[k] = vk;
    (InPlace ? x : x1)[k] = xk;
  }
  return bad == 0;
}
}  // namespace

bool Adam::compute_update() {
  const std::int64_t t = steps_ + 1;
  const AdamOptions& o = options_;
  const double c1 = 1.0 - std::pow(o.beta1, double(t)), c2 = 1.0 - std::pow(o.beta2, double(t));
  const bool in_place = mode() == UpdateMode::in_place;
  bool finite = true;
  for (State& s : state_)
    dispatch(s.param->value.dtype(), [&](auto z) {
      using T = decltype(z);
      const Rule<T> rule(o, o.lr * lr_scale_ / c1, c2);
      T *x = s.param->value.view<T>().data, *m = s.exp_avg.view<T>().data, *v = s.exp_avg_sq.view<T>().data;
      const T* g = s.param->grad.view<T>().data;
      const std::int64_t n = s.param->value.numel();
      if (in_place)
        finite &= update<true, T>(n, x, g, m, v, nullptr, nullptr, nullptr, rule);
      else
        finite &= update<false, T>(n, x, g, m, v, s.value_next.view<T>().data, s.exp_avg_next.view<T>().data,
                                   s.exp_avg_sq_next.view<T>().data, rule);
    });
  return finite;
}

}  // namespace matmem
