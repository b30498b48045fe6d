#include "matmem/models/training/sgd.hpp"

#include <type_traits>

namespace matmem {

SGD::SGD(ParameterStore& params, SGDOptions options, UpdateMode mode) : Optimizer(mode), options_(options) {
  for (auto& p : params)
    if (!p->buffer) state_.push_back({p.get(), Tensor(p->value.dtype(), p->value.shape()), {}, {}});
  for (State& s : state_) {
    writes_parameter(*s.param, s.value_next);
    if (options_.momentum > 0)
      writes_state(s.param->name + "/momentum_buffer", s.momentum_buffer, s.momentum_buffer_next);
  }
}

namespace {
// One value's update (the header's math): x and b (the value, momentum_buffer; b unused without momentum)
// become the new ones, `bad` flags a new value that is not finite. Both loops call it.
template <class T, bool Momentum>
struct Rule {
  T lr, mu, wd;
  [[gnu::always_inline]] void operator()(T& x, T g0, T& b, int& bad) const {
    if constexpr (Momentum) {
      const T bk = mu * b + (g0 + wd * x);
      const T xk = x - lr * bk;
      b = bk;
      x = xk;
      bad |= not_finite(bk) | not_finite(xk);
    } else {
      const T xk = x - lr * (g0 + wd * x);
      x = xk;
      bad |= not_finite(xk);
    }
  }
};
// Into the next buffers x1, b1 (false: a new value may not be finite), or InPlace over x and b (x1, b1 null).
template <bool InPlace, class T, bool Momentum>
bool update(std::int64_t n, T* __restrict x, const T* __restrict g0, T* __restrict b, T* __restrict x1,
            T* __restrict b1, const Rule<T, Momentum>& rule) {
  int bad = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    T xk = x[k], bk = Momentum ? b[k] : T(0);
    rule(xk, g0[k], bk, bad);
    if constexpr (Momentum) (InPlace ? b : b1)[k] = bk;
    (InPlace ? x : x1)[k] = xk;
  }
  return bad == 0;
}
}  // namespace

bool SGD::compute_update() {
  const SGDOptions& o = options_;
  const bool in_place = mode() == UpdateMode::in_place;
  bool finite = true;
  for (State& s : state_)
    dispatch(s.param->value.dtype(), [&](auto z) {
      using T = decltype(z);
      const auto run = [&](auto momentum) {
        constexpr bool M = decltype(momentum)::value;
        const Rule<T, M> rule{T(o.lr * lr_scale_), T(o.momentum), T(o.weight_decay)};
        T* x = s.param->value.view<T>().data;
        const T* g = s.param->grad.view<T>().data;
        T* b = M ? s.momentum_buffer.view<T>().data : nullptr;
        const std::int64_t n = s.param->value.numel();
        if (in_place)
          finite &= update<true, T, M>(n, x, g, b, nullptr, nullptr, rule);
        else
          finite &= update<false, T, M>(n, x, g, b, s.value_next.view<T>().data,
                                        M ? s.momentum_buffer_next.view<T>().data : nullptr, rule);
      };
      if (o.momentum > 0) run(std::true_type{});
      else run(std::false_type{});
    });
  return finite;
}

}  // namespace matmem
