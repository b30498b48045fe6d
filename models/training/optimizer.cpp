#include "matmem/models/training/optimizer.hpp"

#include <utility>

#include <fmt/format.h>

#include "matmem/models/training/adam.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rmsprop.hpp"
#include "matmem/models/training/sgd.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

void Optimizer::writes(std::string what, Tensor& current, Tensor& next) {
  next = Tensor(current.dtype(), current.shape());
  written_.push_back({std::move(what), &current, &next});
}

std::optional<std::string> Optimizer::step() {
  if (!compute_update()) {
    for (const Written& w : written_)
      if (!w.next->all_finite()) return w.what;
    return std::string("a value");  // flagged but not found: the flag errs on the side of refusing
  }
  for (Written& w : written_) std::swap(*w.current, *w.next);
  ++steps_;
  return std::nullopt;
}

std::unique_ptr<Optimizer> make_optimizer(const Config& c, ParameterStore& params) {
  const std::string name = c.str("optimizer");
  const double lr = c.num("lr"), wd = c.num("weight_decay");  // lr > 0: its range, check_config
  if (name == "rmsprop")
    return std::make_unique<RMSprop>(params, RMSpropOptions{lr, c.num("rmsprop.alpha"), c.num("rmsprop.momentum"),
                                                            c.num("rmsprop.eps"), wd, c.flag("rmsprop.centered"),
                                                            c.flag("rmsprop.eps_inside")});
  if (name == "adam")
    return std::make_unique<Adam>(params, AdamOptions{lr, c.num("adam.beta1"), c.num("adam.beta2"), c.num("adam.eps"), wd});
  if (name == "sgd") return std::make_unique<SGD>(params, SGDOptions{lr, c.num("sgd.momentum"), wd});
  throw Error(fmt::format("config: unknown optimizer {} (rmsprop, adam or sgd)", name));
}

}  // namespace matmem
