/// @file
/// Learning-rate decay once solved (config key lr.solved_below = b > 0): the applied steps are counted in
/// consecutive windows of W = lr.solved_window steps; at the end of the first window whose mean cost per
/// sequence (StepStats::bits) is below b, the learning rate is multiplied by f = lr.solved_factor for every later
/// step (it says so on the step that ends that window; decayed_at()), on top of lr.schedule, and
/// stays so if the cost rises again. Its aim is the same as grad.outlier's: a run that has learnt its task takes
/// smaller steps, so one rare large gradient moves it less. Skipped steps (non-finite, outlier) count in no
/// window. Its checkpoint state ("lr_solved": "steps sum decayed_at") holds the window's count and sum and the
/// step of the decay; a checkpoint without it (the rule turned on at resume) starts it afresh.
#pragma once
#include <memory>

#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rules/rule.hpp"
#include "matmem/models/training/rules/window_mean.hpp"

namespace matmem {

/// The learning rate × f once a window's mean cost is below b (see the file).
class SolvedDecay : public TrainingRule {
 public:
  /// The rule of the config's lr.solved_* keys, or nullptr when lr.solved_below is 0; throws Error naming the
  /// key of a bad value.
  static std::unique_ptr<SolvedDecay> from_config(const Config& config);
  /// Decays by `factor` after the first window of `window` steps whose mean cost is below `below`.
  SolvedDecay(double below, double factor, std::int64_t window);

  /// The step after which the learning rate was multiplied by the factor; −1: not (yet) decayed.
  std::int64_t decayed_at() const { return at_; }

  const char* name() const override { return "lr_solved"; }  ///< its checkpoint key
  double lr_factor() const override { return at_ >= 0 ? factor_ : 1.0; }  ///< the factor once decayed, else 1
  /// Adds the step's cost to the window; decays at the first below b.
  void after_step(std::int64_t step, StepStats& stats) override;
  std::optional<std::string> state() const override;  ///< its checkpoint state (see the file)
  /// Refuses a state that save() did not write.
  void set_state(const std::optional<std::string>& text, std::int64_t step) override;

 private:
  double below_, factor_;
  WindowMean costs_;
  std::int64_t at_ = -1;
};

}  // namespace matmem
