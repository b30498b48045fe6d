// Early stopping (models/training/early_stopping.hpp) on hand-made sequences of validation errors.
#include "models/training/early_stopping.hpp"

#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/error.hpp"

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
}
