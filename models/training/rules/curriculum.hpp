/// @file
/// Curriculum (config key curriculum.threshold = θ > 0; Graves et al. 2014 and later NTM work train on short
/// sequences or few items first): the task's sizes {min, max} (Task::size_range: copy lengths, recall items)
/// are drawn from {min, level} instead, level = curriculum.start (or min) at first. After every applied step
/// the step's cost per sequence (bits, class errors or NMSE) joins a window; once the window holds
/// curriculum.window steps, level grows by one if their mean cost is below θ, and the window starts afresh.
/// At level = max the draws are sample_into's, the same numbers from the same Rng. The level and the window
/// are its checkpoint state ("curriculum": "level steps sum"), so a resumed run draws what an uninterrupted one
/// does. It says its level when a run begins and each time it grows; its figure "curriculum_level" is the level.
#pragma once
#include <memory>

#include "matmem/models/tasks/tasks.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rules/rule.hpp"
#include "matmem/models/training/rules/window_mean.hpp"

namespace matmem {

/// The curriculum (see the file).
class Curriculum : public TrainingRule {
 public:
  /// The rule of the config's curriculum.* keys on `task`, or nullptr when curriculum.threshold is 0; throws
  /// Error naming the key of a bad value.
  static std::unique_ptr<Curriculum> from_config(const Config& config, const Task& task);
  /// Grows from `start` to `max` by windows of `window` steps whose mean cost is below `threshold`.
  /// `size_name` names the sizes in what it says (Task::size_name).
  Curriculum(double threshold, std::int64_t min, std::int64_t max, std::int64_t start, std::int64_t window,
             const char* size_name = "size");

  std::int64_t level() const { return level_; }  ///< the largest size drawn now

  const char* name() const override { return "curriculum"; }  ///< its checkpoint key
  std::optional<std::int64_t> largest_size() const override { return level_; }  ///< level()
  void begin(std::int64_t step) override;  ///< says the level
  void after_step(std::int64_t step, StepStats& stats) override;  ///< adds the step's cost to the window
  std::vector<std::pair<std::string, double>> figures() const override;  ///< "curriculum_level"
  std::optional<std::string> state() const override;  ///< its checkpoint state (see the file)
  /// Refuses a state that save() did not write.
  void set_state(const std::optional<std::string>& text, std::int64_t step) override;

 private:
  double threshold_;
  std::int64_t min_, max_, level_;
  WindowMean costs_;
  const char* size_name_;
};

}  // namespace matmem
