// Long and large: a 10,000-step unroll trains without overflowing the stack, and a run that would not fit
// in memory is refused before it allocates, with an estimate that matches what a pass really holds.
#include <catch2/catch.hpp>

#include <cmath>

#include "models/training/trainer.hpp"
#include "small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// Copy sequences of exactly `length` matrices (2 length + 1 time steps) of a tiny model.
Config long_config(const std::string& model, int length) {
  Config c = testing::small_config(model, length, 1);
  c.set("model.layers", "\"2x2\"", "test");
  c.set("task.rows", "1", "test");
  c.set("task.cols", "2", "test");
  c.set("task.min_length", std::to_string(length), "test");
  c.set("ntm.slots", "3", "test");
  c.set("ntm.slot_rows", "1", "test");
  c.set("ntm.slot_cols", "2", "test");
  return c;
}

TEST_CASE("a 10,000-step unroll trains one step without overflowing the stack", "[trainer][limits]") {
  for (const char* model : {"matrnn", "matntm"}) {
    INFO(model);
    Trainer t(long_config(model, 5000));
    const StepStats s = t.step();
    CHECK(s.frames == 10001);
    CHECK(std::isfinite(s.loss));
    CHECK(t.steps_done() == 1);
  }
}

TEST_CASE("a run that would exceed memory is refused up front with what it needs and what there is",
          "[trainer][limits]") {
  Config c = testing::small_config("matntm");
  c.set("batch", "100000000", "test");
  c.set("task.max_length", "1000", "test");
  CHECK_THROWS_WITH(Trainer(c), Contains("memory: this run needs about") && Contains("GiB at its longest sequence") &&
                                    Contains("2001 time steps × batch 100000000") && Contains("this machine has") &&
                                    Contains("GiB available"));
  c.set("memory.check", "false", "test");  // the check can be turned off; the estimate stays
  c.set("batch", "4", "test");
  c.set("task.max_length", "4", "test");
  CHECK(Trainer(c).memory_estimate().available > 0);
}

// The peak of a pass over sequences of `length` (every sequence that long), against the estimate of the same
// run drawing lengths 1 to `length`, which probes lengths 1 and 3 only.
void check_estimate(Config c, int length) {
  c.set("task.min_length", "1", "test");
  c.set("task.max_length", std::to_string(length), "test");
  const MemoryEstimate m = Trainer(c).memory_estimate();
  CHECK(m.longest_frames == 2 * length + 1);
  c.set("task.min_length", std::to_string(length), "test");
  Trainer t(c);
  t.step();
  t.tape().clear();
  CHECK(m.tape_bytes == Approx(double(t.tape().peak_pass_bytes())).epsilon(0.1));
}
}  // namespace

TEST_CASE("the memory estimate matches the tape a pass at the longest sequence holds", "[trainer][limits]") {
  for (const char* model : {"matrnn", "matntm"})
    for (int batch : {3, 32}) {
      INFO(model << " batch " << batch);
      check_estimate(testing::small_config(model, 12, batch), 12);
    }
  // The paper's MatNTM at batch 64, whose passes hold more than Tape::kRecomputeAbove: the probes must not
  // recompute where a run's first pass saves.
  INFO("paper's matntm, batch 64");
  Config c;
  c.set("batch", "64", "test");
  check_estimate(c, 6);
}
