#include "models/training/rmsprop.hpp"

#include <cmath>

namespace matmem {

RMSprop::RMSprop(ParameterStore& params, RMSpropOptions options) : options_(options) {
  for (auto& p : params) {
    State s{p.get(), Tensor(p->value.dtype(), p->value.shape()), {}, {}};
    if (options_.centered) s.grad_avg = Tensor(p->value.dtype(), p->value.shape());
    if (options_.momentum > 0) s.momentum_buffer = Tensor(p->value.dtype(), p->value.shape());
    state_.push_back(std::move(s));
  }
}

std::map<std::string, Tensor*> RMSprop::state_tensors() {
  std::map<std::string, Tensor*> out;
  for (State& s : state_) {
    out[s.param->name + "/square_avg"] = &s.square_avg;
    if (options_.centered) out[s.param->name + "/grad_avg"] = &s.grad_avg;
    if (options_.momentum > 0) out[s.param->name + "/momentum_buffer"] = &s.momentum_buffer;
  }
  return out;
}

namespace {
template <class T>
void update(Parameter& p, Tensor& sq, Tensor& ga, Tensor& mb, const RMSpropOptions& o, double lr_scale) {
  T* x = p.value.view<T>().data;
  const T* g0 = p.grad.view<T>().data;
  T* v = sq.view<T>().data;
  T* m = o.centered ? ga.view<T>().data : nullptr;
  T* b = o.momentum > 0 ? mb.view<T>().data : nullptr;
  const T alpha = T(o.alpha), lr = T(o.lr * lr_scale), eps = T(o.eps), mu = T(o.momentum), wd = T(o.weight_decay);
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
  for (State& s : state_)
    dispatch(s.param->value.dtype(), [&](auto z) {
      update<decltype(z)>(*s.param, s.square_avg, s.grad_avg, s.momentum_buffer, options_, lr_scale_);
    });
  ++steps_;
}

}  // namespace matmem
