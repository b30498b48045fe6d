// One and two RMSprop steps against numbers computed by hand from the formula in rmsprop.hpp.
#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/models/training/rmsprop.hpp"

using namespace matmem;

TEST_CASE("RMSprop with momentum matches hand-computed steps", "[optim]") {
  ParameterStore params(DType::f64);
  Parameter& p = params.add("w", matrices(1, 1, 2));
  p.value.set(0, 1.0);
  p.value.set(1, -2.0);
  RMSprop opt(params, {.lr = 0.01, .alpha = 0.9, .momentum = 0.5, .eps = 1e-8});
  // step 1, g = (0.5, -3): v = 0.1 g² = (0.025, 0.9); b = g / (√v + ε); p -= 0.01 b
  p.grad.set(0, 0.5);
  p.grad.set(1, -3.0);
  opt.step();
  const double b0 = 0.5 / (std::sqrt(0.025) + 1e-8), b1 = -3.0 / (std::sqrt(0.9) + 1e-8);
  CHECK(p.value.get(0) == Approx(1.0 - 0.01 * b0).epsilon(1e-12));
  CHECK(p.value.get(1) == Approx(-2.0 - 0.01 * b1).epsilon(1e-12));
  // step 2, g = (0.1, 1): v = 0.9 v + 0.1 g²; b = 0.5 b + g / (√v + ε)
  p.grad.set(0, 0.1);
  p.grad.set(1, 1.0);
  const double x0 = p.value.get(0), x1 = p.value.get(1);
  opt.step();
  const double v0 = 0.9 * 0.025 + 0.1 * 0.01, v1 = 0.9 * 0.9 + 0.1 * 1.0;
  const double c0 = 0.5 * b0 + 0.1 / (std::sqrt(v0) + 1e-8), c1 = 0.5 * b1 + 1.0 / (std::sqrt(v1) + 1e-8);
  CHECK(p.value.get(0) == Approx(x0 - 0.01 * c0).epsilon(1e-12));
  CHECK(p.value.get(1) == Approx(x1 - 0.01 * c1).epsilon(1e-12));
}

TEST_CASE("centered RMSprop without momentum matches a hand-computed step", "[optim]") {
  ParameterStore params(DType::f32);
  Parameter& p = params.add("w", matrices(1, 1, 1));
  p.value.set(0, 0.5);
  RMSprop opt(params, {.lr = 0.1, .alpha = 0.5, .momentum = 0.0, .eps = 1e-6, .centered = true});
  p.grad.set(0, 2.0);
  opt.step();
  // v = 0.5*4 = 2, m = 0.5*2 = 1, d = √(2 − 1) + 1e-6
  CHECK(p.value.get(0) == Approx(0.5 - 0.1 * 2.0 / (1.0 + 1e-6)).epsilon(1e-6));
}

TEST_CASE("plain RMSprop and centered RMSprop with momentum match hand-computed steps", "[optim]") {
  // One parameter of two values and one of one (the update runs per parameter), g = (1, -2) and 4.
  for (const bool centered : {false, true}) {
    INFO((centered ? "centered, momentum 0.5" : "plain"));
    ParameterStore params(DType::f64);
    Parameter& a = params.add("a", matrices(1, 1, 2));
    Parameter& c = params.add("c", matrices(1, 1, 1));
    a.value.set(0, 1.0);
    a.value.set(1, 2.0);
    c.value.set(0, -1.0);
    const double lr = 0.1, alpha = 0.75, eps = 1e-6, mu = centered ? 0.5 : 0.0;
    RMSprop opt(params, {.lr = lr, .alpha = alpha, .momentum = mu, .eps = eps, .centered = centered});
    const double g[3] = {1.0, -2.0, 4.0}, x[3] = {1.0, 2.0, -1.0};
    a.grad.set(0, g[0]);
    a.grad.set(1, g[1]);
    c.grad.set(0, g[2]);
    for (int step = 1; step <= 2; ++step) {
      opt.step();
      double want[3];
      for (int k = 0; k < 3; ++k) {
        // the same g both steps: v_1 = (1−α) g², v_2 = α v_1 + (1−α) g² (m likewise with g), d = √(v − m²) + ε
        const double v1 = (1 - alpha) * g[k] * g[k], m1 = centered ? (1 - alpha) * g[k] : 0.0;
        const double v2 = alpha * v1 + (1 - alpha) * g[k] * g[k], m2 = centered ? alpha * m1 + (1 - alpha) * g[k] : 0.0;
        const double s1 = g[k] / (std::sqrt(v1 - m1 * m1) + eps), s2 = g[k] / (std::sqrt(v2 - m2 * m2) + eps);
        // momentum: b_1 = s_1, b_2 = μ b_1 + s_2; without it each step moves by its own s
        want[k] = step == 1 ? x[k] - lr * s1 : x[k] - lr * s1 - lr * (mu * s1 + s2);
      }
      CHECK(a.value.get(0) == Approx(want[0]).epsilon(1e-12));
      CHECK(a.value.get(1) == Approx(want[1]).epsilon(1e-12));
      CHECK(c.value.get(0) == Approx(want[2]).epsilon(1e-12));
    }
  }
}
