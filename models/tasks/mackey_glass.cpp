#include "matmem/models/tasks/mackey_glass.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
constexpr double kBeta = 0.2, kGamma = 0.1, kPower = 10, kTau = 17, kStep = 0.1, kHistory = 1.2, kTransient = 1000;
constexpr std::int64_t kPerUnit = 10;  // integration steps per time unit (1 / kStep)
constexpr std::int64_t kDelaySteps = 170;  // τ / h

double slope(double x, double delayed) { return kBeta * delayed / (1 + std::pow(delayed, kPower)) - kGamma * x; }
}  // namespace

std::vector<double> MackeyGlassTask::integrate(double time_units) {
  const auto n = std::int64_t(std::llround(time_units / kStep));
  std::vector<double> x(std::size_t(n + 1));
  x[0] = kHistory;
  auto past = [&](std::int64_t i) { return i < 0 ? kHistory : x[std::size_t(i)]; };  // x at step i ≤ current
  for (std::int64_t i = 0; i < n; ++i) {
    const double d0 = past(i - kDelaySteps), d1 = past(i + 1 - kDelaySteps), dm = 0.5 * (d0 + d1);
    const double xi = x[std::size_t(i)];
    const double k1 = slope(xi, d0), k2 = slope(xi + 0.5 * kStep * k1, dm), k3 = slope(xi + 0.5 * kStep * k2, dm),
                 k4 = slope(xi + kStep * k3, d1);
    x[std::size_t(i + 1)] = xi + kStep / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
  }
  return x;
}

MackeyGlassTask::MackeyGlassTask(MackeyGlassOptions o) : o_(o) {
  if (o.horizon < 1 || o.horizon > 1000)
    throw Error(fmt::format("mackey_glass task: the horizon must be 1 to 1000 samples (got {})", o.horizon));
  if (o.min_length < 1 || o.min_length > o.max_length || o.max_length + o.horizon >= kSamples)
    throw Error(fmt::format("mackey_glass task: need 1 ≤ min_length ≤ max_length and max_length + horizon < {} (got "
                            "{}..{}, horizon {})",
                            kSamples, o.min_length, o.max_length, o.horizon));
  if (o.batch < 1) throw Error(fmt::format("mackey_glass task: batch must be ≥ 1 (got {})", o.batch));
  const std::vector<double> x = integrate(kTransient + double(kSamples));
  series_.resize(std::size_t(kSamples));
  double mean = 0, square = 0;
  for (std::int64_t k = 0; k < kSamples; ++k) {
    const double v = x[std::size_t((std::int64_t(kTransient) + k) * kPerUnit)];
    series_[std::size_t(k)] = v;
    mean += v;
  }
  mean /= double(kSamples);
  for (double v : series_) square += (v - mean) * (v - mean);
  const double sd = std::sqrt(square / double(kSamples));
  for (double& v : series_) v = (v - mean) / sd;
}

void MackeyGlassTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, rng.uniform_int(o_.min_length, o_.max_length), out, dtype);
}

void MackeyGlassTask::sample_size_into(Rng& rng, std::int64_t l, Sequence& s, DType dtype) const {
  if (l < 1 || l + o_.horizon >= kSamples)
    throw Error(fmt::format("mackey_glass task: a window of {} samples (horizon {}) does not fit the series of {}", l,
                            o_.horizon, kSamples));
  const Shape frame = matrices(o_.batch, 1, 1);
  s.reset();
  s.kind = TargetKind::reals;
  std::vector<std::int64_t> start(std::size_t(o_.batch));
  for (auto& t0 : start) t0 = rng.uniform_int(std::int64_t(0), kSamples - l - o_.horizon);
  for (std::int64_t t = 0; t < l; ++t) {
    Tensor& x = s.add_input(dtype, frame);
    for (std::int64_t b = 0; b < o_.batch; ++b) x.set(b, series_[std::size_t(start[std::size_t(b)] + t)]);
  }
  for (std::int64_t t = 0; t < l; ++t) {
    Tensor& y = s.add_target(dtype, frame, t);
    for (std::int64_t b = 0; b < o_.batch; ++b)
      y.set(b, series_[std::size_t(start[std::size_t(b)] + t + o_.horizon)]);
  }
}

}  // namespace matmem
