// The Mackey–Glass task: the integrated series against a fine Euler integration and the attractor's known
// range, the windows and their targets, and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "matmem/models/tasks/mackey_glass.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("Mackey–Glass: Runge–Kutta agrees with a fine Euler integration and stays on the τ = 17 attractor",
          "[tasks][mackey_glass]") {
  const std::vector<double> rk = MackeyGlassTask::integrate(300);  // steps of 0.1
  REQUIRE(rk.size() == 3001);
  // Euler with steps of 0.001, the delayed value read exactly (17 000 steps back).
  const double h = 0.001;
  const std::int64_t n = 300000, lag = 17000;
  std::vector<double> x(std::size_t(n + 1));
  x[0] = 1.2;
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = i < lag ? 1.2 : x[std::size_t(i - lag)];
    x[std::size_t(i + 1)] = x[std::size_t(i)] + h * (0.2 * d / (1 + std::pow(d, 10)) - 0.1 * x[std::size_t(i)]);
  }
  double worst = 0;
  for (std::int64_t t = 0; t <= 100; ++t)  // the first 100 time units, before the chaos separates them
    worst = std::max(worst, std::abs(rk[std::size_t(t * 10)] - x[std::size_t(t * 1000)]));
  CHECK(worst < 2e-3);
  CHECK(worst > 0);
  const auto [lo, hi] = std::minmax_element(rk.begin() + 1000, rk.end());
  CHECK(*lo > 0.2);  // the attractor lies within about 0.4 .. 1.35
  CHECK(*hi < 1.45);
  CHECK(*hi - *lo > 0.6);  // and is not a fixed point
}

TEST_CASE("Mackey–Glass: windows of the standardised series, each target the sample `horizon` steps on",
          "[tasks][mackey_glass]") {
  MackeyGlassTask task({.horizon = 3, .min_length = 5, .max_length = 9, .batch = 4});
  const std::vector<double>& s = task.series();
  REQUIRE(std::int64_t(s.size()) == MackeyGlassTask::kSamples);
  double mean = 0, square = 0;
  for (double v : s) mean += v;
  mean /= double(s.size());
  for (double v : s) square += (v - mean) * (v - mean);
  CHECK(std::abs(mean) < 1e-9);
  CHECK(square / double(s.size()) == Approx(1.0));
  Rng rng(3);
  const Sequence q = task.sample(rng);
  CHECK(q.kind == TargetKind::reals);
  const std::size_t l = q.inputs.size();
  REQUIRE((l >= 5 && l <= 9));
  REQUIRE(q.targets.size() == l);
  bool starts_differ = false;
  for (std::int64_t b = 0; b < 4; ++b) {
    // Find the window's start in the series, then check every frame and target against it.
    std::int64_t start = -1;
    for (std::size_t k = 0; k + l + 3 < s.size() && start < 0; ++k) {
      bool match = true;
      for (std::size_t t = 0; t < l && match; ++t) match = float(s[k + t]) == float(q.inputs[t].get(b));
      if (match) start = std::int64_t(k);
    }
    INFO("sequence " << b);
    REQUIRE(start >= 0);
    for (std::size_t t = 0; t < l; ++t) {
      CHECK(q.target_steps[t] == std::int64_t(t));
      CHECK(float(q.targets[t].get(b)) == float(s[std::size_t(start) + t + 3]));
    }
    if (b > 0 && float(q.inputs[0].get(b)) != float(q.inputs[0].get(0))) starts_differ = true;
  }
  CHECK(starts_differ);
  CHECK_THROWS_WITH(MackeyGlassTask({.horizon = 0}), Contains("horizon must be 1 to 1000"));
  CHECK_THROWS_WITH(MackeyGlassTask({.min_length = 9, .max_length = 3}), Contains("min_length ≤ max_length"));
}
