/// @file
/// The best parameters (001 §4.4: the parameters of the lowest validation loss): at every evaluation of the
/// held-out data whose score (eval.metric) is below the best so far (strictly; a NaN never is), a copy of the
/// model's parameters is kept. They are written beside the checkpoint as best.safetensors (format
/// matmem-best-1; its metadata names the step and holds the run's config), which `matmem eval` and `matmem
/// inspect` use unless --last. The checkpoint's state ("best_parameters": "step score") names the step of the
/// copy; on resume, best.safetensors is read back only when it holds that step's parameters (a run stopped
/// between writing it and the checkpoint leaves a newer one, which the resumed run rewrites). A checkpoint of
/// earlier versions held the step and score in early_stopping's state (upgrade_rule_states()).
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "matmem/models/training/rules/rule.hpp"

namespace matmem {

class Trainer;

/// best_parameters' checkpoint state: "step score", the score in hexadecimal (read back exactly).
std::string best_parameters_state(std::int64_t step, double score);

/// Keeps the parameters of the best evaluation (see the file). Always in a run's rules (without evaluations it
/// keeps nothing and saves no state).
class BestParameters : public TrainingRule {
 public:
  /// Records the score (lower is better) after training step `step`, copying the parameters when it is the
  /// new best.
  void update(const Model& model, double score, std::int64_t step);
  bool has() const { return !best_.empty(); }  ///< a copy has been kept
  double best() const { return score_; }       ///< the lowest score so far (infinity before any)
  std::int64_t best_step() const { return step_; }  ///< the step of that score; −1: no evaluation yet
  /// Puts the best parameters into the model (in place: each keeps its buffer); false when there are none.
  bool restore(Model& model) const;
  /// The copies, in the order of model.params().
  const std::vector<Tensor>& tensors() const { return best_; }

  const char* name() const override { return "best_parameters"; }  ///< its checkpoint key
  /// "best" (the lowest score, infinity before any) and "best_step" (its step, −1 before any).
  std::vector<std::pair<std::string, double>> figures() const override {
    return {{"best", score_}, {"best_step", double(step_)}};
  }
  /// Update() with the evaluation's score.
  void after_evaluation(const EvalReport& report, const Model& model) override;
  std::optional<std::string> state() const override;  ///< its checkpoint state (see the file)
  /// Refuses a state that save() did not write.
  void set_state(const std::optional<std::string>& text, std::int64_t step) override;
  /// Best.safetensors, when the best changed.
  void save_files(const std::string& dir, const Model& model, const Config& config) const override;
  /// Best.safetensors, when it holds the state's step.
  void load_files(const std::string& dir, const Model& model) override;

 private:
  double score_ = std::numeric_limits<double>::infinity();
  std::int64_t step_ = -1;
  std::vector<Tensor> best_;
  // The step of the parameters in best.safetensors, and the directory it is in (a branched run writes its own).
  mutable std::int64_t written_ = -1;
  mutable std::string written_dir_;
};

/// Puts the run's best parameters into its model (training cannot go on from them); false when it has none.
bool restore_best(Trainer& trainer);
/// What `matmem eval` and `matmem inspect` run: the best parameters unless `last` or the run has none (then
/// the last), put into the model; says which: "the parameters of step N (best validation error 0.1234)"
/// ("held-out" for a generated task's held-out batches) or "the last parameters (step N)".
std::string use_best_parameters(Trainer& trainer, bool last);

}  // namespace matmem
