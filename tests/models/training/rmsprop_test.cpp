// One and two RMSprop steps against numbers computed by hand from the formula in rmsprop.hpp.
#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rmsprop.hpp"
#include "matmem/models/training/trainer.hpp"

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

TEST_CASE("Graves' RMSprop (centered, ε inside the root) matches his update computed by hand", "[optim]") {
  // Graves 2013 eq. 38–41 with Graves et al. 2014's constants: n ← ℵn + (1−ℵ)g², ḡ ← ℵḡ + (1−ℵ)g,
  // Δ ← ℶΔ − η g/√(n − ḡ² + ε), θ ← θ + Δ; ℵ = 0.95, ℶ = 0.9, ε = 1e-4, η = 1e-4. Gradients of the size
  // where ε inside or outside the root differ by a factor of about four.
  ParameterStore params(DType::f64);
  Parameter& p = params.add("w", matrices(1, 1, 2));
  p.value.set(0, 0.3);
  p.value.set(1, -0.7);
  const double a = 0.95, mu = 0.9, eps = 1e-4, lr = 1e-4;
  RMSprop opt(params, {.lr = lr, .alpha = a, .momentum = mu, .eps = eps, .centered = true, .eps_inside = true});
  const double g[2][2] = {{0.01, -0.002}, {-0.004, 0.003}};  // [step][element]
  double n[2] = {0, 0}, gbar[2] = {0, 0}, delta[2] = {0, 0}, theta[2] = {0.3, -0.7};
  for (int step = 0; step < 2; ++step) {
    for (int k = 0; k < 2; ++k) {
      p.grad.set(k, g[step][k]);
      n[k] = a * n[k] + (1 - a) * g[step][k] * g[step][k];
      gbar[k] = a * gbar[k] + (1 - a) * g[step][k];
      delta[k] = mu * delta[k] - lr * g[step][k] / std::sqrt(n[k] - gbar[k] * gbar[k] + eps);
      theta[k] += delta[k];
    }
    opt.step();
    INFO("step " << step + 1);
    CHECK(p.value.get(0) == Approx(theta[0]).epsilon(1e-12));
    CHECK(p.value.get(1) == Approx(theta[1]).epsilon(1e-12));
    // The first step in numbers: n = 5e-6, ḡ = 5e-4, so θ moves by −1e-4 · 0.01/√(5e-6 − 2.5e-7 + 1e-4); with ε
    // outside the root the divisor would be √4.75e-6 + 1e-4, about a quarter of it.
    if (step == 0) CHECK(p.value.get(0) == Approx(0.3 - 1e-4 * 0.01 / std::sqrt(1.0475e-4)).epsilon(1e-12));
  }
}

TEST_CASE("rmsprop.eps_inside reaches the optimiser from the config", "[optim][config]") {
  ParameterStore params(DType::f64);
  Parameter& p = params.add("w", matrices(1, 1, 1));
  p.value.set(0, 1.0);
  Config c;
  c.set("optimizer", "rmsprop", "test");
  c.set("rmsprop.centered", "true", "test");
  c.set("rmsprop.eps_inside", "true", "test");
  c.set("rmsprop.eps", "1e-4", "test");
  c.set("rmsprop.momentum", "0", "test");
  c.set("lr", "0.1", "test");
  const auto opt = make_optimizer(c, params);
  p.grad.set(0, 0.01);
  opt->step();
  // v = 0.05·1e-4 = 5e-6, m = 5e-4: d = √(5e-6 − 2.5e-7 + 1e-4)
  CHECK(p.value.get(0) == Approx(1.0 - 0.1 * 0.01 / std::sqrt(4.75e-6 + 1e-4)).epsilon(1e-12));
}
