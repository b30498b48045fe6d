// One and two RMSprop steps against numbers computed by hand from the formula in rmsprop.hpp.
#include <catch2/catch.hpp>

#include <cmath>

#include "models/training/rmsprop.hpp"

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
