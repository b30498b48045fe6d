#include "matmem/models/training/optimizer.hpp"

#include <utility>

#include <fmt/format.h>

#include "matmem/models/training/adam.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rmsprop.hpp"
#include "matmem/models/training/sgd.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

void Optimizer::writes_parameter(Parameter& p, Tensor& next) {
  if (mode_ == UpdateMode::whole) next = Tensor(p.value.dtype(), p.value.shape());
  parameters_.push_back({"parameter " + p.name, &p.value, &next});
}

void Optimizer::writes_state(const std::string& name, Tensor& current, Tensor& next) {
  if (mode_ == UpdateMode::whole) next = Tensor(current.dtype(), current.shape());
  states_[name] = {"optimiser state " + name, &current, &next};
}

std::map<std::string, Tensor*> Optimizer::state_tensors() const {
  std::map<std::string, Tensor*> out;
  for (const auto& [name, w] : states_) out[name] = w.current;
  return out;
}

std::optional<std::string> Optimizer::step() {
  const bool in_place = mode_ == UpdateMode::in_place;
  if (!compute_update()) {  // the first tensor with a value that is not finite: parameters, then state by name
    const auto written = [&](const Written& w) -> const Tensor& { return in_place ? *w.current : *w.next; };
    for (const Written& w : parameters_)
      if (!written(w).all_finite()) return w.what;
    for (const auto& [name, w] : states_)
      if (!written(w).all_finite()) return w.what;
    return std::string("a value");  // flagged but not found: the flag errs on the side of refusing
  }
  if (!in_place) {
    for (Written& w : parameters_) std::swap(*w.current, *w.next);
    for (auto& [name, w] : states_) std::swap(*w.current, *w.next);
  }
  ++steps_;
  return std::nullopt;
}

std::unique_ptr<Optimizer> make_optimizer(const Config& c, ParameterStore& params, UpdateMode mode) {
  const std::string name = c.str("optimizer");
  const double lr = c.num("lr"), wd = c.num("weight_decay");  // lr > 0: its range, check_config
  if (name == "rmsprop")
    return std::make_unique<RMSprop>(params,
                                     RMSpropOptions{lr, c.num("rmsprop.alpha"), c.num("rmsprop.momentum"),
                                                    c.num("rmsprop.eps"), wd, c.flag("rmsprop.centered"),
                                                    c.flag("rmsprop.eps_inside")},
                                     mode);
  if (name == "adam")
    return std::make_unique<Adam>(params, AdamOptions{lr, c.num("adam.beta1"), c.num("adam.beta2"), c.num("adam.eps"), wd},
                                  mode);
  if (name == "sgd") return std::make_unique<SGD>(params, SGDOptions{lr, c.num("sgd.momentum"), wd}, mode);
  throw Error(fmt::format("config: unknown optimizer {} (rmsprop, adam or sgd)", name));
}

}  // namespace matmem
