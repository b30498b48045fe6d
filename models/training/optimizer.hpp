/// @file
/// Optimiser interface: one update from the gradients held by the parameters, with state keyed by
/// parameter name (so a checkpoint stores and restores it by name, never by position).
///
/// An update is taken whole or not at all (UpdateMode::whole). Each tensor it writes (the parameters' values,
/// the optimiser's state) has a second buffer; the update computes every new value into those from the current
/// ones, and only when all of them are finite are the two buffers of each tensor swapped. So an update that
/// would overflow changes nothing, without a copy of everything kept for a rollback or a pass to look for
/// non-finite values (the kernels flag them as they write). UpdateMode::in_place writes the new values over
/// the current ones, with the same arithmetic (the same values, bit for bit) and no second buffers: it moves
/// about half the bytes of the whole mode's pass, and an update that overflows leaves its values partly new.
/// The trainer takes it where a non-finite update stops the run (nonfinite = "stop").
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "matmem/autodiff/parameters.hpp"

namespace matmem {

class Config;

/// How an update writes its values (above): whole, into second buffers swapped when all are finite (an update
/// that overflows changes nothing); in_place, over the current values (the same values, fewer bytes moved).
enum class UpdateMode { whole, in_place };

/// An optimiser (RMSprop, Adam, SGD: make_optimizer() below) over a ParameterStore.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// One update of every parameter from the gradient it holds. Returns nothing when it was taken; when a new
  /// value would not be finite it returns what the update would have made non-finite: "parameter NAME", or
  /// "optimiser state NAME/SLOT" (the first such, parameters in their order, then the state in
  /// state_tensors()' order), and steps() is unchanged. UpdateMode::whole then leaves every value and state as
  /// it was; UpdateMode::in_place leaves them partly updated, that value among them (the run is over).
  std::optional<std::string> step();
  UpdateMode mode() const { return mode_; }  ///< whole or in place
  virtual const char* name() const = 0;  ///< "rmsprop", "adam", "sgd"
  /// Every state tensor, as "<parameter>/<slot>" -> tensor (for checkpoints): those writes_state() registered.
  std::map<std::string, Tensor*> state_tensors() const;
  /// Steps taken (Adam's bias correction needs it; checkpointed for all).
  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t n) { steps_ = n; }  ///< restores the steps taken (from a checkpoint)
  /// The learning rate of the next steps is the configured one times this (a schedule's factor,
  /// models/training/schedule.hpp; 1 leaves every update as it was, bit for bit).
  void set_lr_scale(double scale) { lr_scale_ = scale; }
  double lr_scale() const { return lr_scale_; }  ///< the factor set_lr_scale() set

 protected:
  explicit Optimizer(UpdateMode mode) : mode_(mode) {}  ///< each optimiser's constructor passes its mode
  /// Registers a parameter the update writes and `next`, the buffer its new values go to (shaped here like it;
  /// left empty in place).
  void writes_parameter(Parameter& p, Tensor& next);
  /// Registers a state tensor "<parameter>/<slot>" and `next`, the buffer its new values go to (left empty in
  /// place).
  void writes_state(const std::string& name, Tensor& current, Tensor& next);
  /// Computes the new value of every registered tensor from the current values and the gradients, as of
  /// steps() + 1 steps, into its `next` buffer, or in place over the current values (mode()); returns false
  /// when one of them may not be finite.
  virtual bool compute_update() = 0;

  std::int64_t steps_ = 0;  ///< steps taken
  double lr_scale_ = 1.0;   ///< the learning rate's factor

 private:
  UpdateMode mode_;
  struct Written {
    std::string what;  // "parameter NAME", "optimiser state NAME/SLOT"
    Tensor* current;
    Tensor* next;
  };
  std::vector<Written> parameters_;          // in the parameters' order
  std::map<std::string, Written> states_;  // by name
};

/// 1 when y is infinite or NaN (y − y is then NaN), else 0. An update's loop ORs it over the values it writes
/// into an int (`bad |= not_finite(y)`), which GCC vectorises where it does not a bool AND.
template <class T>
inline int not_finite(T y) {
  return !(y - y == T(0));
}

/// The optimiser the config names (key "optimizer": rmsprop, adam, sgd) with its settings, over `params`.
std::unique_ptr<Optimizer> make_optimizer(const Config& config, ParameterStore& params,
                                          UpdateMode mode = UpdateMode::whole);

}  // namespace matmem
