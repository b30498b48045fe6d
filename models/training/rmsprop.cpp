#include "matmem/models/training/rmsprop.hpp"

#include <cmath>
#include <type_traits>

namespace matmem {

RMSprop::RMSprop(ParameterStore& params, RMSpropOptions options, UpdateMode mode)
    : Optimizer(mode), options_(options) {
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
// One value's update (the header's math), with the options' two variants (centered, momentum) fixed at compile
// time so that the loops below hold no branch: x, v, m, b are the value, square_avg, grad_avg and
// momentum_buffer (m, b unused when their variant is off), and they become the new ones; `bad` flags a new value
// that is not finite. Both loops call it, so the whole and in-place updates are the same arithmetic.
template <class T, bool Centered, bool Momentum>
struct Rule {
  T alpha, lr, mu, wd, inside, outside;  // d = √(s + inside) + outside: ε in one of the two places, 0 in the other
  Rule(const RMSpropOptions& o, double lr_scale)
      : alpha(T(o.alpha)), lr(T(o.lr * lr_scale)), mu(T(o.momentum)), wd(T(o.weight_decay)),
        inside(o.eps_inside ? T(o.eps) : T(0)), outside(o.eps_inside ? T(0) : T(o.eps)) {}
  [[gnu::always_inline]] void operator()(T& x, T g0, T& v, T& m, T& b, int& bad) const {
    const T g = g0 + wd * x;
    const T vk = alpha * v + (T(1) - alpha) * g * g;
    T d;
    if constexpr (Centered) {
      const T mk = alpha * m + (T(1) - alpha) * g;
      d = std::sqrt(vk - mk * mk + inside) + outside;
      m = mk;
      bad |= not_finite(mk);
    } else {
      d = std::sqrt(vk + inside) + outside;
    }
    T xk;
    if constexpr (Momentum) {
      const T bk = mu * b + g / d;
      xk = x - lr * bk;
      b = bk;
      bad |= not_finite(bk);
    } else {
      xk = x - lr * g / d;
    }
    v = vk;
    x = xk;
    bad |= not_finite(vk) | not_finite(xk);
  }
};

// One parameter's update, into the next buffers x1, v1, m1, b1 of x, v, m, b (null where their variant is off),
// or InPlace over x, v, m, b (x1 … b1 null); false when a new value may not be finite. A MatNTM has about a
// hundred parameters, many of one to a few values (3,592 values in the copy model), so what each parameter costs
// besides its values counts. No two arrays overlap (__restrict): with nine arrays GCC would otherwise need more
// overlap checks than it makes, and leave the loop scalar.
template <bool InPlace, class T, bool Centered, bool Momentum>
bool update(std::int64_t n, T* __restrict x, const T* __restrict g0, T* __restrict v, T* __restrict m,
            T* __restrict b, T* __restrict x1, T* __restrict v1, T* __restrict m1, T* __restrict b1,
            const Rule<T, Centered, Momentum>& rule) {
  int bad = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    T xk = x[k], vk = v[k], mk = Centered ? m[k] : T(0), bk = Momentum ? b[k] : T(0);
    rule(xk, g0[k], vk, mk, bk, bad);
    (InPlace ? x : x1)[k] = xk;
    (InPlace ? v : v1)[k] = vk;
    if constexpr (Centered) (InPlace ? m : m1)[k] = mk;
    if constexpr (Momentum) (InPlace ? b : b1)[k] = bk;
  }
  return bad == 0;
}
}  // namespace

bool RMSprop::compute_update() {
  bool finite = true;
  const bool in_place = mode() == UpdateMode::in_place;
  const auto all = [&](auto z, auto centered, auto momentum) {
    using T = decltype(z);
    constexpr bool C = decltype(centered)::value, M = decltype(momentum)::value;
    const Rule<T, C, M> rule(options_, lr_scale_);
    for (State& s : state_) {
      T* x = s.param->value.view<T>().data;
      const T* g = s.param->grad.view<T>().data;
      T* v = s.square_avg.view<T>().data;
      T* m = C ? s.grad_avg.view<T>().data : nullptr;
      T* b = M ? s.momentum_buffer.view<T>().data : nullptr;
      const std::int64_t n = s.param->value.numel();
      if (in_place)
        finite &= update<true, T, C, M>(n, x, g, v, m, b, nullptr, nullptr, nullptr, nullptr, rule);
      else
        finite &= update<false, T, C, M>(n, x, g, v, m, b, s.value_next.view<T>().data,
                                         s.square_avg_next.view<T>().data, C ? s.grad_avg_next.view<T>().data : nullptr,
                                         M ? s.momentum_buffer_next.view<T>().data : nullptr, rule);
    }
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
