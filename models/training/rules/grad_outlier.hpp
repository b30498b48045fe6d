/// @file
/// Outlier gradients (config key grad.outlier = F > 0): a finite step whose gradient norm n_t (before clipping)
/// exceeds F times the running mean m of the norms before it is not applied (skips(); it says so): a run
/// that has learnt its task makes tiny gradients, RMSprop's and Adam's second moments shrink with them, and one
/// rare large gradient — clipped or not — then moves the parameters by many times a usual step and can throw the
/// solution away (models/README.md, "Stable training"). m is the bias-corrected exponential mean m = s/(1 − βᶜ)
/// of the norms, s ← βs + (1 − β)·min(n_t, F·m), β = 1 − 1/W (W = grad.outlier_window), c the steps counted;
/// the rule acts once c ≥ W. A skipped step adds F·m, not n_t, so a lasting rise of the norm lifts m by a factor
/// 1 + (F − 1)/W a step until the steps are applied again. A non-finite step is handled by `nonfinite` first
/// and counts for neither m nor skips(). Its checkpoint state ("grad_outlier": "counted skips s") makes a
/// resumed run skip what an uninterrupted one does; a checkpoint without it (the rule turned on at resume)
/// starts it afresh.
#pragma once
#include <memory>

#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rules/rule.hpp"

namespace matmem {

/// Skips the update of a step with an outlier gradient norm (see the file).
class GradOutlier : public TrainingRule {
 public:
  /// The rule of the config's grad.outlier keys, or nullptr when grad.outlier is 0; throws Error naming the
  /// key of a bad value.
  static std::unique_ptr<GradOutlier> from_config(const Config& config);
  /// Factor F over a running mean of horizon `window` steps.
  GradOutlier(double factor, std::int64_t window);

  double mean() const;                           ///< m, 0 before the first step
  double mean_before() const { return before_; }  ///< m as the last step's norm was compared with it
  std::int64_t skips() const { return skips_; }  ///< steps skipped so far

  const char* name() const override { return "grad_outlier"; }  ///< its checkpoint key
  bool on_gradient(std::int64_t step, StepStats& stats) override;  ///< false for an outlier norm
  std::vector<std::pair<std::string, double>> figures() const override;  ///< "outlier_skips"
  std::int64_t skipped_updates() const override { return skips_; }  ///< skips()
  std::string summary() const override;  ///< the skips, if any
  std::optional<std::string> state() const override;  ///< its checkpoint state (see the file)
  /// Refuses a state that save() did not write.
  void set_state(const std::optional<std::string>& text, std::int64_t step) override;

 private:
  double factor_, beta_;  // F, 1 − 1/W
  std::int64_t window_, count_ = 0, skips_ = 0;
  double sum_ = 0;  // s
  double before_ = 0;  // m before the last step
};

}  // namespace matmem
