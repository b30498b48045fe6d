// Optimiser interface: one update from the gradients held by the parameters, with state keyed by
// parameter name (so a checkpoint stores and restores it by name, never by position).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "autodiff/parameters.hpp"

namespace matmem {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  virtual const char* name() const = 0;
  // Every state tensor, as "<parameter>/<slot>" -> tensor (for checkpoints).
  virtual std::map<std::string, Tensor*> state_tensors() = 0;
  // Steps taken (Adam's bias correction needs it; checkpointed for all).
  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t n) { steps_ = n; }

 protected:
  std::int64_t steps_ = 0;
};

}  // namespace matmem
