/// @file
/// Optimiser interface: one update from the gradients held by the parameters, with state keyed by
/// parameter name (so a checkpoint stores and restores it by name, never by position).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "matmem/autodiff/parameters.hpp"

namespace matmem {

class Config;

/// An optimiser (RMSprop, Adam, SGD: make_optimizer() below) over a ParameterStore.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// One update of every parameter from the gradient it holds.
  virtual void step() = 0;
  virtual const char* name() const = 0;  ///< "rmsprop", "adam", "sgd"
  /// Every state tensor, as "<parameter>/<slot>" -> tensor (for checkpoints).
  virtual std::map<std::string, Tensor*> state_tensors() = 0;
  /// Steps taken (Adam's bias correction needs it; checkpointed for all).
  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t n) { steps_ = n; }  ///< restores the steps taken (from a checkpoint)
  /// The learning rate of the next steps is the configured one times this (a schedule's factor,
  /// models/training/schedule.hpp; 1 leaves every update as it was, bit for bit).
  void set_lr_scale(double scale) { lr_scale_ = scale; }
  double lr_scale() const { return lr_scale_; }  ///< the factor set_lr_scale() set

 protected:
  std::int64_t steps_ = 0;  ///< steps taken
  double lr_scale_ = 1.0;   ///< the learning rate's factor
};

/// The optimiser the config names (key "optimizer": rmsprop, adam, sgd) with its settings, over `params`.
std::unique_ptr<Optimizer> make_optimizer(const Config& config, ParameterStore& params);

}  // namespace matmem
