/// @file
/// Early stopping on a validation error (config keys eval.interval, eval.patience).
///
/// The trainer evaluates the validation part every `interval` steps and hands the error here. An error below
/// the best so far (strictly) is the new best, and the count of evaluations without improvement restarts at 0;
/// any other adds 1 to it. Training stops when that count reaches `patience` (patience 0: never stops). A NaN
/// error never improves. The state is four numbers, kept in the checkpoint, so a resumed run stops where an
/// uninterrupted one would.
///
/// BestParameters keeps, beside that rule, a copy of the model's parameters at the best evaluation, which the
/// trainer writes to best.safetensors and `matmem eval` evaluates (001 §4.4: the parameters of the lowest
/// validation loss).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "matmem/models/core/model.hpp"

namespace matmem {

/// The early-stopping rule (see the file).
class EarlyStopping {
 public:
  /// Stops after `patience` evaluations without improvement (0: never).
  explicit EarlyStopping(std::int64_t patience = 0) : patience_(patience) {}
  /// One evaluation's validation error after `step` steps; true when training should stop now.
  bool record(std::int64_t step, double error);
  bool stopped() const { return stopped_; }  ///< the rule said to stop
  double best() const { return best_; }      ///< the lowest error so far (infinity before any)
  std::int64_t best_step() const { return best_step_; }  ///< -1: no evaluation yet
  std::int64_t since_best() const { return bad_; }  ///< evaluations since the best without improvement
  std::int64_t patience() const { return patience_; }  ///< as constructed

  std::string state() const;                ///< "best best_step since_best stopped", for a checkpoint
  void set_state(const std::string& text);  ///< refuses text that state() did not write

 private:
  std::int64_t patience_;
  double best_ = std::numeric_limits<double>::infinity();
  std::int64_t best_step_ = -1, bad_ = 0;
  bool stopped_ = false;
};

/// The parameters at the best evaluation seen, and when to stop (EarlyStopping's rule).
class BestParameters {
 public:
  /// Keeps the best parameters, with EarlyStopping(patience) as the rule.
  explicit BestParameters(std::int64_t patience = 0) : rule_(patience) {}
  /// Records the score (lower is better) after training step `step`, copying the parameters when it is the
  /// new best; true when the run should stop.
  bool update(const Model& model, double score, std::int64_t step);
  bool has() const { return !best_.empty(); }  ///< a copy has been kept
  /// Puts the best parameters into the model (in place: each keeps its buffer); false when there are none.
  bool restore(Model& model) const;
  /// The copies, in the order of model.params().
  const std::vector<Tensor>& tensors() const { return best_; }
  /// Takes copies read from a file (same order and shapes as tensors()).
  void set(std::vector<Tensor> tensors) { best_ = std::move(tensors); }
  const EarlyStopping& rule() const { return rule_; }  ///< the stopping rule
  EarlyStopping& rule() { return rule_; }              ///< the stopping rule, to restore its state

 private:
  EarlyStopping rule_;
  std::vector<Tensor> best_;
};

}  // namespace matmem
