#include "models/training/rmsprop.hpp"

#include <cmath>

namespace matmem {

RMSprop::RMSprop(ParameterStore& params, RMSpropOptions options) : params_(params), options_(options) {
  for (auto& p : params_) {
    State& s = state_[p->name];
    s.square_avg = Tensor(p->value.dtype(), p->value.shape());
    if (options_.centered) s.grad_avg = Tensor(p->value.dtype(), p->value.shape());
    if (options_.momentum > 0) s.momentum_buffer = Tensor(p->value.dtype(), p->value.shape());
    slots_.push_back({p.get(), &s});
  }
}

namespace {
template <class T>
void update(Parameter& p, RMSprop::State& s, const RMSpropOptions& o) {
  T* x = p.value.view<T>().data;
  const T* g0 = p.grad.view<T>().data;
  T* v = s.square_avg.view<T>().data;
  T* m = o.centered ? s.grad_avg.view<T>().data : nullptr;
  T* b = o.momentum > 0 ? s.momentum_buffer.view<T>().data : nullptr;
  const T alpha = T(o.alpha), lr = T(o.lr), eps = T(o.eps), mu = T(o.momentum), wd = T(o.weight_decay);
  for (std::int64_t k = 0; k < p.value.numel(); ++k) {
    const T g = g0[k] + wd * x[k];
    v[k] = alpha * v[k] + (T(1) - alpha) * g * g;
    T d;
    if (m) {
      m[k] = alpha * m[k] + (T(1) - alpha) * g;
      d = std::sqrt(v[k] - m[k] * m[k]) + eps;
    } else {
      d = std::sqrt(v[k]) + eps;
    }
    if (b) {
      b[k] = mu * b[k] + g / d;
      x[k] -= lr * b[k];
    } else {
      x[k] -= lr * g / d;
    }
  }
}
}  // namespace

void RMSprop::step() {
  for (auto& [p, s] : slots_)
    dispatch(p->value.dtype(), [&](auto z) { update<decltype(z)>(*p, *s, options_); });
}

}  // namespace matmem
