// Prediction of the Mackey–Glass chaotic series, the classic benchmark of gamma networks (003).
//
//   dx/dt = β x(t−τ) / (1 + x(t−τ)^n) − γ x(t),   β = 0.2, γ = 0.1, n = 10, τ = 17 (chaotic),
// integrated once, when the task is made, by the classical Runge–Kutta method with step h = 0.1 from the
// constant history x(t) = 1.2 for t ≤ 0 (the delayed value at a half step is the mean of the two stored
// values around it), the first 1,000 time units discarded as transient, then sampled every time unit into a
// series of kSamples values, standardised to mean 0 and variance 1 (the cost, a normalised MSE, does not
// depend on that scale). A sequence is a window of l ~ U{min_length..max_length} consecutive samples, its
// start drawn from the run's Rng (one l per batch, a start per sequence): the input at step t is the sample
// s_t as a 1×1 matrix, the target the sample `horizon` steps later, s_{t+horizon}, at every step. Target kind
// reals: loss the MSE, cost the normalised MSE. Size: the window's length ("length").
#pragma once
#include <vector>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

struct MackeyGlassOptions {
  std::int64_t horizon = 1, min_length = 10, max_length = 50, batch = 16;
};

class MackeyGlassTask : public Task {
 public:
  static constexpr std::int64_t kSamples = 20000;
  explicit MackeyGlassTask(MackeyGlassOptions o);
  const char* name() const override { return "mackey_glass"; }
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t length, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "length"; }
  std::pair<std::int64_t, std::int64_t> size_range() const override { return {o_.min_length, o_.max_length}; }
  std::vector<std::int64_t> eval_sizes() const override { return {10, 20, 50, 100, 200}; }
  std::int64_t input_rows() const override { return 1; }
  std::int64_t input_cols() const override { return 1; }
  std::int64_t output_rows() const override { return 1; }
  std::int64_t output_cols() const override { return 1; }
  std::int64_t batch() const override { return o_.batch; }
  TargetKind target_kind() const override { return TargetKind::reals; }
  // The standardised series, one sample per time unit.
  const std::vector<double>& series() const { return series_; }
  // The raw series x(t) at t = 0, 0.1, 0.2, … up to `time_units` (with its constant history before 0).
  static std::vector<double> integrate(double time_units);

 private:
  MackeyGlassOptions o_;
  std::vector<double> series_;
};

}  // namespace matmem
