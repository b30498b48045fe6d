#include "matmem/models/training/rules/lr_solved.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

std::unique_ptr<SolvedDecay> SolvedDecay::from_config(const Config& config) {
  const double b = config.num("lr.solved_below");
  if (b == 0) return nullptr;
  const double f = config.num("lr.solved_factor");
  const std::int64_t w = config.integer("lr.solved_window");
  if (!(b > 0) || !std::isfinite(b))
    throw Error(fmt::format("config: lr.solved_below = {} must be a cost > 0 (or 0: off)", b));
  return std::make_unique<SolvedDecay>(b, f, w);
}

SolvedDecay::SolvedDecay(double below, double factor, std::int64_t window)
    : below_(below), factor_(factor), costs_{window, 0, 0.0} {}

void SolvedDecay::after_step(std::int64_t step, StepStats& stats) {
  if (at_ >= 0) return;
  double mean = 0;
  if (!costs_.add(stats.bits, mean) || !(mean < below_)) return;
  at_ = step;
  say(fmt::format("step {}: the mean cost of the last {} steps is below {}: learning rate × {} from here on "
                  "(lr.solved_below)", step, costs_.window, below_, factor_));
}

std::optional<std::string> SolvedDecay::state() const {
  // The window's count and sum (hexadecimal: read back exactly), the decay's step.
  return fmt::format("{} {:a} {}", costs_.steps, costs_.sum, at_);
}

void SolvedDecay::set_state(const std::optional<std::string>& text, std::int64_t step) {
  if (!text) return;  // written without the rule: it starts afresh
  std::int64_t window_steps = -1, at = -2;
  double sum = 0;
  if (!parse_state_fields(*text, {&window_steps, &sum, &at}) || window_steps < 0 || window_steps >= costs_.window ||
      !std::isfinite(sum) || at < -1 || at > step)
    throw Error(fmt::format("lr_solved \"{}\" is not a step count below lr.solved_window = {}, a finite sum and the "
                            "step of the decay (−1: none) up to the checkpoint's {}",
                            *text, costs_.window, step));
  costs_.steps = window_steps, costs_.sum = sum, at_ = at;
}

}  // namespace matmem
