// Learning-rate schedules (models/training/schedule.hpp): the factor by hand, every optimiser scaling its
// step by it, and a trainer's steps under a step schedule against the update written out.
#include "matmem/models/training/schedule.hpp"

#include <cmath>
#include <numbers>
#include <vector>

#include <catch2/catch.hpp>

#include "matmem/models/training/adam.hpp"
#include "matmem/models/training/rmsprop.hpp"
#include "matmem/models/training/sgd.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"
#include "small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("lr schedules: constant, step and cosine factors by hand", "[training][schedule]") {
  Config c;
  CHECK(lr_scale(c, 12345, 20000) == 1.0);  // the default: constant
  c.set("lr.schedule", "step", "test");
  c.set("lr.step_every", "3", "test");
  c.set("lr.step_factor", "0.5", "test");
  CHECK(lr_scale(c, 0, 10) == 1.0);
  CHECK(lr_scale(c, 2, 10) == 1.0);
  CHECK(lr_scale(c, 3, 10) == 0.5);
  CHECK(lr_scale(c, 7, 10) == 0.25);
  c.set("lr.schedule", "cosine", "test");
  c.set("lr.cosine_final", "0.1", "test");
  CHECK(lr_scale(c, 0, 10) == Approx(1.0));
  CHECK(lr_scale(c, 5, 10) == Approx(0.55));
  CHECK(lr_scale(c, 10, 10) == Approx(0.1));
  CHECK(lr_scale(c, 2, 10) == Approx(0.1 + 0.9 * (1 + std::cos(std::numbers::pi * 0.2)) / 2));
  for (const char* bad : {"lr.schedule=linear", "lr.step_every=0", "lr.step_factor=1.5", "lr.step_factor=0.0",
                          "lr.cosine_final=-0.1"}) {
    Config b;
    b.assign(bad, "test");
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    CHECK_THROWS_WITH(check_config(b), Contains(key));
  }
}

TEST_CASE("every optimiser scales its step by the schedule's factor", "[training][schedule]") {
  // One parameter, gradient 2, from 1: the first step of each optimiser at factor 0.25 equals its first
  // step at lr × 0.25.
  auto first_step = [](auto make, double scale) {
    ParameterStore params(DType::f64);
    Parameter& p = params.add("w", matrices(1, 1, 1));
    p.value.set(0, 1.0);
    auto opt = make(params);
    opt.set_lr_scale(scale);
    p.grad.set(0, 2.0);
    opt.step();
    return p.value.get(0);
  };
  auto sgd = [](double lr) { return [lr](ParameterStore& p) { return SGD(p, {.lr = lr, .momentum = 0.9}); }; };
  auto adam = [](double lr) { return [lr](ParameterStore& p) { return Adam(p, {.lr = lr}); }; };
  auto rms = [](double lr) { return [lr](ParameterStore& p) { return RMSprop(p, {.lr = lr}); }; };
  CHECK(first_step(sgd(0.1), 0.25) == Approx(first_step(sgd(0.025), 1.0)).epsilon(1e-15));
  CHECK(first_step(adam(0.1), 0.25) == Approx(first_step(adam(0.025), 1.0)).epsilon(1e-15));
  CHECK(first_step(rms(0.1), 0.25) == Approx(first_step(rms(0.025), 1.0)).epsilon(1e-15));
  CHECK(first_step(sgd(0.1), 0.25) != first_step(sgd(0.1), 1.0));
}

TEST_CASE("a trainer under a step schedule: each step's update is −lr · factor · gradient", "[training][schedule]") {
  Config c = testing::small_config("matrnn");
  c.set("optimizer", "sgd", "test");
  c.set("sgd.momentum", "0.0", "test");
  c.set("lr", "0.01", "test");
  c.set("clip.value", "0", "test");
  c.set("lr.schedule", "step", "test");
  c.set("lr.step_every", "2", "test");
  c.set("lr.step_factor", "0.5", "test");
  Trainer t(c);
  // Steps 0 and 1 at 0.01, 2 and 3 at 0.005, 4 at 0.0025; the gradients stay on the parameters after a step.
  for (double lr : {0.01, 0.01, 0.005, 0.005, 0.0025}) {
    std::vector<Tensor> before;
    for (const auto& p : t.model().params()) before.push_back(p->value);
    t.step();
    std::size_t k = 0;
    for (const auto& p : t.model().params()) {
      const Tensor& b = before[k++];
      for (std::int64_t i = 0; i < p->value.numel(); i += 7)
        REQUIRE(p->value.get(i) == Approx(b.get(i) - lr * p->grad.get(i)).epsilon(1e-5).margin(1e-9));
    }
  }
}
