// Early stopping (models/training/rules/early_stopping.hpp) on hand-made sequences of validation errors, and
// the best parameters kept beside it (models/training/rules/best_parameters.hpp).
#include "matmem/models/training/rules/early_stopping.hpp"

#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/runtime/error.hpp"
#include "../small_config.hpp"

using namespace matmem;

namespace {
// The step (1-based evaluation index × 10) at which `errors` stop a run of this patience, or 0 if they never do.
std::int64_t stop_step(std::int64_t patience, const std::vector<double>& errors) {
  EarlyStopping e(patience);
  for (std::size_t k = 0; k < errors.size(); ++k)
    if (e.record(std::int64_t(k + 1) * 10, errors[k])) return std::int64_t(k + 1) * 10;
  return 0;
}
}  // namespace

TEST_CASE("early stopping stops after `patience` evaluations without a strictly better error", "[training][early]") {
  // Best 0.30 at step 30; 40, 50 no better (an equal error is no better): patience 2 stops at 50.
  const std::vector<double> errors = {0.5, 0.4, 0.3, 0.35, 0.3, 0.2, 0.1};
  CHECK(stop_step(2, errors) == 50);
  CHECK(stop_step(3, errors) == 0);  // step 60 improves before a third bad evaluation
  CHECK(stop_step(1, errors) == 40);
  CHECK(stop_step(0, errors) == 0);  // patience 0: never
  CHECK(stop_step(1, {0.5, 0.4, 0.3, 0.2}) == 0);
  CHECK(stop_step(2, {0.5, 0.6, 0.4, 0.6, 0.7}) == 50);  // the count restarts at a new best
  CHECK(stop_step(2, {NAN, NAN}) == 20);                 // a NaN never improves
}

TEST_CASE("early stopping keeps the best error and its step, and round-trips its state", "[training][early]") {
  EarlyStopping e(3);
  CHECK(e.best_step() == -1);
  e.record(10, 0.25);
  e.record(20, 0.125);
  e.record(30, 0.5);
  CHECK(e.best() == 0.125);
  CHECK(e.best_step() == 20);
  CHECK(e.since_best() == 1);
  EarlyStopping f(3);
  f.set_state(e.state());
  CHECK(f.state() == e.state());
  CHECK(f.record(40, 0.2) == e.record(40, 0.2));
  CHECK(f.record(50, 0.2));  // the third without improvement
  EarlyStopping fresh(3);
  fresh.set_state(EarlyStopping(3).state());  // an infinite best
  CHECK(std::isinf(fresh.best()));
  CHECK_THROWS_AS(fresh.set_state("0.1 20"), Error);
  CHECK_THROWS_AS(fresh.set_state("0.1 20 -1 0"), Error);
  CHECK_THROWS_AS(fresh.set_state("0.1 20 1 0 x"), Error);
  // The best in hexadecimal, as every rule writes its sums: a score no short decimal holds comes back exactly.
  EarlyStopping third(3);
  third.record(10, 1.0 / 3.0);
  CHECK(third.state() == "0x1.5555555555555p-2 10 0 0");
  fresh.set_state(third.state());
  CHECK(fresh.best() == 1.0 / 3.0);
  // The decimal state of checkpoints written before reads too, "inf" before any evaluation.
  fresh.set_state("inf -1 0 0");
  CHECK(std::isinf(fresh.best()));
  fresh.set_state("0.125 20 2 1");
  CHECK((fresh.best() == 0.125 && fresh.best_step() == 20 && fresh.since_best() == 2 && fresh.stopped()));
}

TEST_CASE("best parameters: the copy of the best evaluation's step, put back in place", "[training][early]") {
  const Config c = testing::small_config("matrnn");
  const auto task = make_task(c);
  const auto model = make_model(c, *task, DType::f64);
  Parameter& p = *model->params().begin()->get();
  BestParameters best;
  EarlyStopping stopping(3);
  CHECK_FALSE(best.restore(*model));  // nothing recorded yet
  // The lowest loss seen (1.9) is neither the first evaluation's nor the last's: keeping the first, the last
  // or the current parameters all restore another step.
  const std::vector<double> losses = {3.0, 2.0, 2.5, 2.0, 1.9, 2.2, 2.3, 2.4, 1.0};
  std::int64_t stopped_at = 0;
  for (std::size_t k = 0; k < losses.size() && !stopped_at; ++k) {
    p.value.set(0, double(k + 1));  // the parameter's value names the step
    best.update(*model, losses[k], std::int64_t(k + 1));
    if (stopping.record(std::int64_t(k + 1), losses[k])) stopped_at = std::int64_t(k + 1);
  }
  CHECK(stopped_at == 8);  // 3 steps after step 5: the 1.0 of step 9 is never seen
  // The step of the first lowest loss among those seen (an equal loss later is no better).
  std::int64_t argmin = 1;
  for (std::int64_t k = 2; k <= stopped_at; ++k)
    if (losses[std::size_t(k - 1)] < losses[std::size_t(argmin - 1)]) argmin = k;
  REQUIRE(argmin > 1);
  REQUIRE(argmin < stopped_at);
  CHECK(best.best_step() == argmin);
  CHECK(best.best() == losses[std::size_t(argmin - 1)]);
  CHECK(stopping.best_step() == argmin);
  const void* buffer = p.value.raw();
  REQUIRE(best.restore(*model));
  CHECK(p.value.get(0) == double(argmin));
  CHECK(p.value.raw() == buffer);  // in place: the tape's references stay valid
  BestParameters rising;  // keeps the first of rising scores
  for (std::int64_t k = 1; k <= 20; ++k) rising.update(*model, double(k), k);
  CHECK(rising.best_step() == 1);
  rising.update(*model, NAN, 21);  // a NaN is never better
  CHECK(rising.best_step() == 1);
}
