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
/// It speaks for itself: the lines it has to say (a skipped update, a new curriculum level, a decay, a stop) go
/// to a list the caller drains after each step (take_messages()), and the numbers it wants kept (figures():
/// the best evaluation, the updates it skipped) are named, so that the command, the sweep and the Python
/// module print and record what rules say without knowing any of them.
///
/// The trainer holds the rules make_rules() returns (models/training/rules/registry.hpp) and runs them in that
/// list's order at each point of a step; it knows none of them by name. Trainer::rule<R>() finds one by type
/// (for tests of a rule).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

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
  /// Before the first step this process runs, of a fresh run (`step` 0) or a resumed one (after set_state()).
  virtual void begin(std::int64_t /*step*/) {}
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

  // What it says.
  /// The lines it said since the last call, oldest first, each a whole log line; the list is emptied.
  std::vector<std::string> take_messages() { return std::exchange(messages_, {}); }
  /// Numbers it keeps over the run, by name, for files and summaries: "best" and "best_step" (the best
  /// evaluation), "outlier_skips", "curriculum_level", …; a name is one rule's.
  virtual std::vector<std::pair<std::string, double>> figures() const { return {}; }
  /// Updates it refused over the whole run (on_gradient() false), counted with the trainer's skipped steps.
  virtual std::int64_t skipped_updates() const { return 0; }
  /// What it has to say at the end of a run, appended to the run's closing line ("; …"); empty: nothing.
  virtual std::string summary() const { return {}; }

 protected:
  /// Says a line (see take_messages()).
  void say(std::string line) { messages_.push_back(std::move(line)); }

 private:
  std::vector<std::string> messages_;
};

/// Parses a rule's state: whole numbers and sums (hexadecimal floating point, "%a", read back exactly)
/// separated by white space; true only when the whole text is exactly those fields.
bool parse_state_fields(const std::string& text, std::initializer_list<std::variant<std::int64_t*, double*>> out);

}  // namespace matmem
