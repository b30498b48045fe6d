#include "matmem/models/training/rules/curriculum.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

std::unique_ptr<Curriculum> Curriculum::from_config(const Config& config, const Task& task) {
  const double th = config.num("curriculum.threshold");
  if (th == 0) return nullptr;
  const auto [lo, hi] = task.size_range();
  const std::int64_t window = config.integer("curriculum.window"), start = config.integer("curriculum.start");
  if (!(th > 0) || !std::isfinite(th))
    throw Error(fmt::format("config: curriculum.threshold = {} must be a cost > 0 (or 0: no curriculum)", th));
  if (hi < 1)
    throw Error(fmt::format("config: curriculum.threshold = {}: task {} has no sizes a curriculum can grow", th,
                            task.name()));
  if (start != 0 && (start < lo || start > hi))
    throw Error(fmt::format("config: curriculum.start = {} must be a {} of task {} ({}..{}), or 0", start,
                            task.size_name(), task.name(), lo, hi));
  return std::make_unique<Curriculum>(th, lo, hi, start ? start : lo, window, task.size_name());
}

Curriculum::Curriculum(double threshold, std::int64_t min, std::int64_t max, std::int64_t start, std::int64_t window,
                       const char* size_name)
    : threshold_(threshold), min_(min), max_(max), level_(start), costs_{window, 0, 0.0}, size_name_(size_name) {}

void Curriculum::begin(std::int64_t) { say(fmt::format("curriculum: {} up to {} (of {})", size_name_, level_, max_)); }

void Curriculum::after_step(std::int64_t step, StepStats& stats) {
  if (level_ >= max_) return;
  if (double mean = 0; costs_.add(stats.bits, mean) && mean < threshold_) {
    ++level_;
    say(fmt::format("curriculum: {} up to {} from step {}", size_name_, level_, step));
  }
}

std::vector<std::pair<std::string, double>> Curriculum::figures() const {
  return {{"curriculum_level", double(level_)}};
}

std::optional<std::string> Curriculum::state() const {  // the window's sum in hexadecimal: read back exactly
  return fmt::format("{} {} {:a}", level_, costs_.steps, costs_.sum);
}

void Curriculum::set_state(const std::optional<std::string>& text, std::int64_t) {
  if (!text) throw Error("metadata curriculum is missing");
  std::int64_t level = 0, window_steps = 0;
  double sum = 0;
  if (!parse_state_fields(*text, {&level, &window_steps, &sum}) || level < min_ || level > max_ || window_steps < 0 ||
      window_steps >= costs_.window || !std::isfinite(sum))
    throw Error(fmt::format("curriculum \"{}\" is not a level in {}..{}, a step count below curriculum.window = {} "
                            "and a finite sum", *text, min_, max_, costs_.window));
  level_ = level, costs_.steps = window_steps, costs_.sum = sum;
}

}  // namespace matmem
