#include "matmem/models/training/sgd.hpp"

namespace matmem {

SGD::SGD(ParameterStore& params, SGDOptions options) : options_(options) {
  for (auto& p : params)
    if (!p->buffer) state_.push_back({p.get(), Tensor(p->value.dtype(), p->value.shape())});
}

std::map<std::string, Tensor*> SGD::state_tensors() {
  std::map<std::string, Tensor*> out;
  if (options_.momentum > 0)
    for (State& s : state_) out[s.param->name + "/momentum_buffer"] = &s.momentum_buffer;
  return out;
}

void SGD::step() {
  const SGDOptions& o = options_;
  for (State& s : state_)
    dispatch(s.param->value.dtype(), [&](auto z) {
      using T = decltype(z);
      T* x = s.param->value.view<T>().data;
      const T* g0 = s.param->grad.view<T>().data;
      T* b = s.momentum_buffer.view<T>().data;
      const T lr = T(o.lr * lr_scale_), mu = T(o.momentum), wd = T(o.weight_decay);
      for (std::int64_t k = 0; k < s.param->value.numel(); ++k) {
        const T g = g0[k] + wd * x[k];
        if (o.momentum > 0) {
          b[k] = mu * b[k] + g;
          x[k] -= lr * b[k];
        } else {
          x[k] -= lr * g;
        }
      }
    });
  ++steps_;
}

}  // namespace matmem
