/// @file
/// Early stopping on a held-out score (config keys eval.interval, eval.patience, eval.metric).
///
/// The trainer evaluates the held-out data every `interval` steps and hands the score (eval.metric: the error
/// or the loss) here. A score below the best so far (strictly) is the new best, and the count of evaluations
/// without improvement restarts at 0; any other adds 1 to it. Training stops when that count reaches
/// `patience` (patience 0: never stops). A NaN score never improves. The state is four numbers, kept in the
/// checkpoint ("early_stopping": "best best_step since_best stopped"), so a resumed run stops where an
/// uninterrupted one would.
///
/// EarlyStopping is the rule's arithmetic (Trainer::stopped_in reads an earlier version's checkpoint state with
/// it); EarlyStoppingRule is it as a TrainingRule, which says when it stops the run.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rules/rule.hpp"

namespace matmem {

/// The early-stopping rule's arithmetic (see the file).
class EarlyStopping {
 public:
  /// Stops after `patience` evaluations without improvement (0: never).
  explicit EarlyStopping(std::int64_t patience = 0) : patience_(patience) {}
  /// One evaluation's score after `step` steps; true when training should stop now.
  bool record(std::int64_t step, double error);
  bool stopped() const { return stopped_; }  ///< the rule said to stop
  double best() const { return best_; }      ///< the lowest score so far (infinity before any)
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

/// Early stopping as a training rule: told every evaluation's score, it stops the run (see the file). Always
/// in a run's rules (patience 0: it never stops), so every checkpoint holds its state.
class EarlyStoppingRule : public TrainingRule {
 public:
  /// The rule of the config's eval.patience.
  static std::unique_ptr<EarlyStoppingRule> from_config(const Config& config);
  /// Stops after `patience` evaluations without improvement (0: never).
  explicit EarlyStoppingRule(std::int64_t patience) : rule_(patience) {}
  const EarlyStopping& rule() const { return rule_; }  ///< its arithmetic and state

  const char* name() const override { return "early_stopping"; }  ///< its checkpoint key
  bool stop() const override { return rule_.stopped(); }  ///< the rule said to stop
  /// EarlyStopping::record() of the score.
  void after_evaluation(const EvalReport& report, const Model& model) override;
  std::optional<std::string> state() const override { return rule_.state(); }  ///< its checkpoint state (see the file)
  /// Refuses a state that save() did not write.
  void set_state(const std::optional<std::string>& text, std::int64_t step) override;

 private:
  EarlyStopping rule_;
};

}  // namespace matmem
