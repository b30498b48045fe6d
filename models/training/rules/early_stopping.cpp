#include "matmem/models/training/rules/early_stopping.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

bool EarlyStopping::record(std::int64_t step, double error) {
  if (error < best_) {
    best_ = error;
    best_step_ = step;
    bad_ = 0;
  } else {
    ++bad_;
  }
  if (patience_ > 0 && bad_ >= patience_) stopped_ = true;
  return stopped_;
}

std::string EarlyStopping::state() const {  // the best score in hexadecimal: read back exactly
  return fmt::format("{:a} {} {} {}", best_, best_step_, bad_, stopped_ ? 1 : 0);
}

void EarlyStopping::set_state(const std::string& text) {
  // parse_state_fields reads the decimal best ("inf" before any) of checkpoints written before too.
  double best = 0;
  std::int64_t step = 0, bad = 0, stopped = 0;
  if (!parse_state_fields(text, {&best, &step, &bad, &stopped}) || std::isnan(best) || bad < 0 || step < -1 ||
      (stopped != 0 && stopped != 1))
    throw Error(fmt::format("early stopping state \"{}\" is not \"best best_step since_best stopped\"", text));
  best_ = best, best_step_ = step, bad_ = bad, stopped_ = stopped == 1;
}

std::unique_ptr<EarlyStoppingRule> EarlyStoppingRule::from_config(const Config& config) {
  return std::make_unique<EarlyStoppingRule>(config.integer("eval.patience"));
}

void EarlyStoppingRule::after_evaluation(const EvalReport& report, const Model&) {
  if (rule_.record(report.step, report.score))
    say(fmt::format("step {}: no better for {} evaluations: stopping early (eval.patience; best at step {})",
                    report.step, rule_.patience(), rule_.best_step()));
}

void EarlyStoppingRule::set_state(const std::optional<std::string>& text, std::int64_t) {
  if (text) rule_.set_state(*text);
}

}  // namespace matmem
