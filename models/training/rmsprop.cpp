#include "matmem/models/training/rmsprop.hpp"

#include <cmath>
#include <type_traits>

namespace matmem {

RMSprop::RMSprop(ParameterStore& params, RMSpropOptions options) : options_(options) {
  for (auto& p : params) {
    if (p->buffer) continue;
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
// One parameter's update, with the options' two variants (centered, momentum) fixed at compile time so that
// the loop holds no branch. A MatNTM has about a hundred parameters, many of one to a few values (3,592 values
// in the copy model), so what each parameter costs besides its values counts.
template <class T, bool Centered, bool Momentum>
void update(Parameter& p, Tensor& sq, Tensor& ga, Tensor& mb, const RMSpropOptions& o, double lr_scale) {
  T* x = p.value.view<T>().data;
  const T* g0 = p.grad.view<T>().data;
  T* v = sq.view<T>().data;
  T* m = Centered ? ga.view<T>().data : nullptr;
  T* b = Momentum ? mb.view<T>().data : nullptr;
  const T alpha = T(o.alpha), lr = T(o.lr * lr_scale), mu = T(o.momentum), wd = T(o.weight_decay);
  // d = √(s + inside) + outside: ε in one of the two places, 0 in the other.
  const T inside = o.eps_inside ? T(o.eps) : T(0), outside = o.eps_inside ? T(0) : T(o.eps);
  for (std::int64_t k = 0, n = p.value.numel(); k < n; ++k) {
    const T g = g0[k] + wd * x[k];
    v[k] = alpha * v[k] + (T(1) - alpha) * g * g;
    T d;
    if constexpr (Centered) {
      m[k] = alpha * m[k] + (T(1) - alpha) * g;
      d = std::sqrt(v[k] - m[k] * m[k] + inside) + outside;
    } else {
      d = std::sqrt(v[k] + inside) + outside;
    }
    if constexpr (Momentum) {
      b[k] = mu * b[k] + g / d;
      x[k] -= lr * b[k];
    } else {
      x[k] -= lr * g / d;
    }
  }
}
}  // namespace

void RMSprop::step() {
  const auto all = [&](auto z, auto centered, auto momentum) {
    for (State& s : state_)
      update<decltype(z), decltype(centered)::value, decltype(momentum)::value>(
          *s.param, s.square_avg, s.grad_avg, s.momentum_buffer, options_, lr_scale_);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (!state_.empty())  // a model's parameters share its dtype (each view checks it)
    dispatch(state_[0].param->value.dtype(), [&](auto z) {
      const bool centered = options_.centered, momentum = options_.momentum > 0;
      if (centered && momentum) all(z, Yes{}, Yes{});
      else if (centered) all(z, Yes{}, No{});
      else if (momentum) all(z, No{}, Yes{});
      else all(z, No{}, No{});
    });
  ++steps_;
}

}  // namespace matmem
