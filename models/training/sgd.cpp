#include "matmem/models/training/sgd.hpp"

namespace matmem {

SGD::SGD(ParameterStore& params, SGDOptions options) : options_(options) {
  for (auto& p : params)
    if (!p->buffer) state_.push_back({p.get(), Tensor(p->value.dtype(), p->value.shape()), {}, {}});
  for (State& s : state_) {
    writes_parameter(*s.param, s.value_next);
    if (options_.momentum > 0)
      writes_state(s.param->name + "/momentum_buffer", s.momentum_buffer, s.momentum_buffer_next);
  }
}

bool SGD::compute_update() {
  const SGDOptions& o = options_;
  bool finite = true;
  for (State& s : state_)
    dispatch(s.param->value.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* x = s.param->value.view<T>().data;
      const T* g0 = s.param->grad.view<T>().data;
      T* x1 = s.value_next.view<T>().data;
      const T lr = T(o.lr * lr_scale_), mu = T(o.momentum), wd = T(o.weight_decay);
      const std::int64_t n = s.param->value.numel();
      int bad = 0;
      if (o.momentum > 0) {
        const T* b = s.momentum_buffer.view<T>().data;
        T* b1 = s.momentum_buffer_next.view<T>().data;
        for (std::int64_t k = 0; k < n; ++k) {
          const T bk = mu * b[k] + (g0[k] + wd * x[k]);
          const T xk = x[k] - lr * bk;
          b1[k] = bk;
          x1[k] = xk;
          bad |= not_finite(bk) | not_finite(xk);
        }
      } else {
        for (std::int64_t k = 0; k < n; ++k) {
          const T xk = x[k] - lr * (g0[k] + wd * x[k]);
          x1[k] = xk;
          bad |= not_finite(xk);
        }
      }
      finite &= bad == 0;
    });
  return finite;
}

}  // namespace matmem
