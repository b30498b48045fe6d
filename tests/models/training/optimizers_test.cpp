// Adam, SGD and clipping against numbers computed by hand from the formulas in their headers.
#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/models/training/adam.hpp"
#include "matmem/models/training/sgd.hpp"
#include "matmem/models/training/clip.hpp"

using namespace matmem;

TEST_CASE("Adam's first two steps match the bias-corrected formula", "[optim]") {
  ParameterStore params(DType::f64);
  Parameter& p = params.add("w", matrices(1, 1, 1));
  p.value.set(0, 1.0);
  Adam opt(params, {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8});
  p.grad.set(0, 2.0);
  opt.step();
  // m = 0.2, v = 0.04; m̂ = 2, v̂ = 4: p = 1 - 0.1 * 2 / (2 + 1e-8)
  CHECK(p.value.get(0) == Approx(1.0 - 0.1 * 2.0 / (2.0 + 1e-8)).epsilon(1e-12));
  const double x1 = p.value.get(0);
  p.grad.set(0, -1.0);
  opt.step();
  const double m = 0.9 * 0.2 - 0.1, v = 0.99 * 0.04 + 0.01;
  const double mhat = m / (1 - 0.81), vhat = v / (1 - 0.9801);
  CHECK(p.value.get(0) == Approx(x1 - 0.1 * mhat / (std::sqrt(vhat) + 1e-8)).epsilon(1e-12));
  CHECK(opt.steps() == 2);
}

TEST_CASE("SGD with momentum matches PyTorch's update", "[optim]") {
  ParameterStore params(DType::f32);
  Parameter& p = params.add("w", matrices(1, 1, 1));
  p.value.set(0, 1.0);
  SGD opt(params, {.lr = 0.5, .momentum = 0.9});
  p.grad.set(0, 1.0);
  opt.step();  // b = 1, p = 0.5
  CHECK(p.value.get(0) == Approx(0.5));
  p.grad.set(0, 1.0);
  opt.step();  // b = 1.9, p = 0.5 - 0.95
  CHECK(p.value.get(0) == Approx(-0.45));
}

TEST_CASE("clipping by value and by global norm", "[optim]") {
  ParameterStore params(DType::f64);
  Parameter& a = params.add("a", matrices(1, 1, 2));
  Parameter& b = params.add("b", matrices(1, 1, 1));
  a.grad.set(0, 30.0);
  a.grad.set(1, -4.0);
  b.grad.set(0, -12.0);
  clip_by_value(params, 10.0);
  CHECK(a.grad.get(0) == 10.0);
  CHECK(a.grad.get(1) == -4.0);
  CHECK(b.grad.get(0) == -10.0);
  // norm √(100 + 16 + 100) = √216 > 6: scaled to norm 6
  const double n = clip_by_global_norm(params, 6.0);
  CHECK(n == Approx(std::sqrt(216.0)));
  CHECK(gradient_norm(params) == Approx(6.0));
  CHECK(a.grad.get(1) == Approx(-4.0 * 6.0 / std::sqrt(216.0)));
  // Over parameters of 1,003 and 5 elements (whole groups of eight and a tail): the norm of every element.
  ParameterStore big(DType::f32);
  Parameter& c = big.add("c", matrices(1, 17, 59));
  Parameter& d = big.add("d", matrices(1, 1, 5));
  double want = 0;
  for (Parameter* p : {&c, &d})
    for (std::int64_t k = 0; k < p->grad.numel(); ++k) {
      const double g = double(float(std::sin(double(k) + double(p->grad.numel()))));
      p->grad.set(k, g);
      want += g * g;
    }
  CHECK(gradient_norm(big) == Approx(std::sqrt(want)).epsilon(1e-14));
}
