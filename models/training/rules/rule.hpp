/// @file
/// TrainingRule: what the trainer does besides a step — a curriculum, a learning-rate decay on a condition,
/// skipping an outlier update, early stopping, keeping the best parameters — behind one small interface
/// (models/training/README.md, "Training rules").
///
/// A rule sees the numbers of each step (StepStats, after the gradient and again after the update) and of each
/// evaluation of held-out data (SplitResult and its score), and may change a small named set of things, which
/// the trainer asks it for before every step: the learning rate's factor, the largest size the task draws,
/// whether this step's update is applied, and whether the run stops. It owns its checkpoint state: one text
/// in the checkpoint's metadata under its name, and files beside the checkpoint if it needs them.
///
/// The trainer holds the rules make_rules() returns (models/training/rules/registry.hpp) and runs them in that
/// list's order at each point of a step; it knows none of them by name. Trainer::rule<R>() finds one by type.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>

#include "matmem/models/core/model.hpp"

namespace matmem {

struct StepStats;
struct SplitResult;
class Config;

/// What an evaluation of held-out data measured, as the rules see it.
struct EvalReport {
  std::int64_t step = 0;                ///< steps done when it ran (after that step's update)
  const SplitResult* result = nullptr;  ///< its mean loss and cost (error) per example
  double score = 0;                     ///< what the rules go by (eval.metric: the error or the loss); lower is better
};

/// One training rule (see the file). Every hook does nothing by default.
class TrainingRule {
 public:
  virtual ~TrainingRule() = default;
  /// Its key in the checkpoint's metadata, and its name in errors: "curriculum", "grad_outlier", ….
  virtual const char* name() const = 0;

  // What it changes, asked before every step.
  /// The learning rate of the steps to come is lr.schedule's times the product of every rule's factor.
  virtual double lr_factor() const { return 1.0; }
  /// The largest size (Task::size_range) the next step draws, from the task's smallest up; none: the task's
  /// own draw (sample_step_into).
  virtual std::optional<std::int64_t> largest_size() const { return std::nullopt; }
  /// True to end the run (Trainer::stopped()).
  virtual bool stop() const { return false; }

  // What it sees.
  /// A step's finite gradient, before clipping (`stats` holds the loss, cost and gradient norm; a rule may fill
  /// its own fields): false to skip the update, the step counting as done. Every rule sees every such step.
  virtual bool on_gradient(std::int64_t /*step*/, StepStats& /*stats*/) { return true; }
  /// After a step's update was applied; `step`: the steps done, this one included.
  virtual void after_step(std::int64_t /*step*/, StepStats& /*stats*/) {}
  /// After an evaluation of the held-out data, with the model's parameters as they are then.
  virtual void after_evaluation(const EvalReport& /*report*/, const Model& /*model*/) {}

  // Its checkpoint state.
  /// The text saved under name() in the checkpoint's metadata; none: nothing saved.
  virtual std::optional<std::string> state() const { return std::nullopt; }
  /// Restores state() from a checkpoint of `step` steps (`text` none: the checkpoint holds no state of this
  /// rule). Throws Error naming the rule and the text when it cannot be what state() writes.
  virtual void set_state(const std::optional<std::string>& /*text*/, std::int64_t /*step*/) {}
  /// Writes the rule's files into the checkpoint's directory `dir`, before the checkpoint (whose metadata
  /// must never name a file that is not there). `config`: the run's, for the files' metadata.
  virtual void save_files(const std::string& /*dir*/, const Model& /*model*/, const Config& /*config*/) const {}
  /// Reads them back after set_state(), on resume.
  virtual void load_files(const std::string& /*dir*/, const Model& /*model*/) {}
};

/// Parses a rule's state: whole numbers and sums (hexadecimal floating point, "%a", read back exactly)
/// separated by white space; true only when the whole text is exactly those fields.
bool parse_state_fields(const std::string& text, std::initializer_list<std::variant<std::int64_t*, double*>> out);

}  // namespace matmem
