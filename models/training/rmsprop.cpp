#include "matmem/models/training/rmsprop.hpp"

#include <cmath>
#include <type_traits>

namespace matmem {

RMSprop::RMSprop(ParameterStore& params, RMSpropOptions options) : options_(options) {
  for (auto& p : params) {
    if (p->buffer) continue;
    State s{p.get(), Tensor(p->value.dtype(), p->value.shape()), {}, {}, {}, {}, {}, {}};
    if (options_.centered) s.grad_avg = Tensor(p->value.dtype(), p->value.shape());
    if (options_.momentum > 0) s.momentum_buffer = Tensor(p->value.dtype(), p->value.shape());
    state_.push_back(std::move(s));
  }
  for (State& s : state_) {
    writes_parameter(*s.param, s.value_next);
    writes_state(s.param->name + "/square_avg", s.square_avg, s.square_avg_next);
    if (options_.centered) writes_state(s.param->name + "/grad_avg", s.grad_avg, s.grad_avg_next);
    if (options_.momentum > 0)
      writes_state(s.param->name + "/momentum_buffer", s.momentum_buffer, s.momentum_buffer_next);
  }
}

namespace {
// One parameter's update into the next buffers, with the options' two variants (centered, momentum) fixed at
// compile time so that the loop holds no branch; false when a new value may not be finite. A MatNTM has about a
// hundred parameters, many of one to a few values (3,592 values in the copy model), so what each parameter
// costs besides its values counts.
// x, v, m, b: the value, square_avg, grad_avg and momentum_buffer, and x1, v1, m1, b1 their next buffers. No two
// overlap (__restrict): with nine arrays GCC would otherwise need more overlap checks than it makes, and leave the
// loop scalar.
template <class T, bool Centered, bool Momentum>
bool update(std::int64_t n, const T* __restrict x, const T* __restrict g0, const T* __restrict v,
            const T* __restrict m, const T* __restrict b, T* __restrict x1, T* __restrict v1, T* __restrict m1,
            T* __restrict b1, const RMSpropOptions& o, double lr_scale) {
  const T alpha = T(o.alpha), lr = T(o.lr * lr_scale), mu = T(o.momentum), wd = T(o.weight_decay);
  // d = √(s + inside) + outside: ε in one of the two places, 0 in the other.
  const T inside = o.eps_inside ? T(o.eps) : T(0), outside = o.eps_inside ? T(0) : T(o.eps);
  int bad = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const T g = g0[k] + wd * x[k];
    const T vk = alpha * v[k] + (T(1) - alpha) * g * g;
    T d;
    if constexpr (Centered) {
      const T mk = alpha * m[k] + (T(1) - alpha) * g;
      d = std::sqrt(vk - mk * mk + inside) + outside;
      m1[k] = mk;
      bad |= not_finite(mk);
    } else {
      d = std::sqrt(vk + inside) + outside;
    }
    T xk;
    if constexpr (Momentum) {
      const T bk = mu * b[k] + g / d;
      xk = x[k] - lr * bk;
      b1[k] = bk;
      bad |= not_finite(bk);
    } else {
      xk = x[k] - lr * g / d;
    }
    v1[k] = vk;
    x1[k] = xk;
    bad |= not_finite(vk) | not_finite(xk);
  }
  return bad == 0;
}
}  // namespace

bool RMSprop::compute_update() {
  bool finite = true;
  const auto all = [&](auto z, auto centered, auto momentum) {
    using T = decltype(z);
    constexpr bool C = decltype(centered)::value, M = decltype(momentum)::value;
    for (State& s : state_)
      finite &= update<T, C, M>(s.param->value.numel(), s.param->value.view<T>().data, s.param->grad.view<T>().data,
                                s.square_avg.view<T>().data, C ? s.grad_avg.view<T>().data : nullptr,
                                M ? s.momentum_buffer.view<T>().data : nullptr, s.value_next.view<T>().data,
                                s.square_avg_next.view<T>().data, C ? s.grad_avg_next.view<T>().data : nullptr,
                                M ? s.momentum_buffer_next.view<T>().data : nullptr, options_, lr_scale_);
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
  return finite;
}

}  // namespace matmem
