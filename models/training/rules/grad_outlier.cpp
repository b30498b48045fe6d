#include "matmem/models/training/rules/grad_outlier.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

std::unique_ptr<GradOutlier> GradOutlier::from_config(const Config& config) {
  const double f = config.num("grad.outlier");
  if (f == 0) return nullptr;
  const std::int64_t w = config.integer("grad.outlier_window");
  if (!(f > 1)) throw Error(fmt::format("config: grad.outlier = {} must be a factor > 1 (or 0: off)", f));
  return std::make_unique<GradOutlier>(f, w);
}

GradOutlier::GradOutlier(double factor, std::int64_t window)
    : factor_(factor), beta_(1.0 - 1.0 / double(window)), window_(window) {}

double GradOutlier::mean() const { return count_ == 0 ? 0.0 : sum_ / (1.0 - std::pow(beta_, double(count_))); }

bool GradOutlier::on_gradient(std::int64_t step, StepStats& stats) {
  const double m = mean();
  before_ = m;
  const bool outlier = count_ >= window_ && stats.grad_norm > factor_ * m;
  sum_ = beta_ * sum_ + (1 - beta_) * (outlier ? factor_ * m : stats.grad_norm);
  ++count_;
  if (outlier) {
    ++skips_;
    say(fmt::format("step {}: update skipped: gradient norm {:.4g} > {} × the running mean {:.4g} (grad.outlier; {} "
                    "so far)", step, stats.grad_norm, factor_, m, skips_));
  }
  return !outlier;
}

std::vector<std::pair<std::string, double>> GradOutlier::figures() const {
  return {{"outlier_skips", double(skips_)}};
}

std::string GradOutlier::summary() const {
  return skips_ ? fmt::format("{} updates skipped for an outlier gradient (grad.outlier)", skips_) : "";
}

std::optional<std::string> GradOutlier::state() const {  // the running sum in hexadecimal: read back exactly
  return fmt::format("{} {} {:a}", count_, skips_, sum_);
}

void GradOutlier::set_state(const std::optional<std::string>& text, std::int64_t) {
  if (!text) return;  // written without the rule: it starts afresh
  std::int64_t counted = 0, skips = 0;
  double sum = 0;
  if (!parse_state_fields(*text, {&counted, &skips, &sum}) || counted < 0 || skips < 0 || skips > counted ||
      !std::isfinite(sum) || sum < 0)
    throw Error(fmt::format("grad_outlier \"{}\" is not two step counts and a finite sum ≥ 0", *text));
  count_ = counted, skips_ = skips, sum_ = sum;
}

}  // namespace matmem
