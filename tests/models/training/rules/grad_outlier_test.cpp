// grad.outlier = F: a finite step whose gradient norm n exceeds F times the running mean m of the norms before
// it is not applied (models/training/rules/grad_outlier.hpp). The tests recompute m from the norms the steps report, by
// the formula, and check every decision, that a skipped step changes nothing and an applied one does, and
// that a resumed run decides as the uninterrupted one.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "matmem/models/training/rules/grad_outlier.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "../small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// The steps the run's outlier rule skipped.
std::int64_t skips_of(const Trainer& t) { return t.rule<GradOutlier>()->skips(); }
std::string temp_dir(const std::string& name) { return testing::temp_dir("matmem_grad_outlier_test", name); }

using testing::state_bytes;

// A factor just above 1, so that a short run of the small MatRNN both skips and applies steps after warm-up.
Config with_rule(double factor, int window) {
  Config c = testing::small_config("matrnn", 6, 3);
  c.set("grad.outlier", std::to_string(factor), "test");
  c.set("grad.outlier_window", std::to_string(window), "test");
  return c;
}
}  // namespace

TEST_CASE("grad.outlier: a step is skipped exactly when its norm exceeds F times the running mean before it",
          "[trainer][outlier]") {
  const double F = 1.05;
  const int W = 3;
  Trainer t(with_rule(F, W));
  const double beta = 1.0 - 1.0 / W;
  double s = 0;  // the exponential sum, recomputed here from the reported norms
  int count = 0, skipped = 0, applied_after_warmup = 0;
  for (int k = 0; k < 60; ++k) {
    const double m = count == 0 ? 0.0 : s / (1.0 - std::pow(beta, count));
    const std::string before = state_bytes(t);
    const std::int64_t optimizer_steps = t.optimizer().steps();
    const StepStats st = t.step();
    INFO("step " << k + 1 << ": norm " << st.grad_norm << ", mean " << m);
    REQUIRE(std::isfinite(st.grad_norm));
    CHECK(t.rule<GradOutlier>()->mean_before() == Approx(m).epsilon(1e-12).margin(1e-300));
    const bool outlier = count >= W && st.grad_norm > F * m;
    REQUIRE(st.skipped == outlier);
    CHECK(st.nonfinite.empty());
    // It says so, and the trainer counts it with the skipped updates.
    const std::vector<std::string> said = t.take_messages();
    REQUIRE(said.size() == (outlier ? 1u : 0u));
    if (outlier)
      CHECK_THAT(said[0], Contains(fmt::format("step {}: update skipped: gradient norm", k + 1)) &&
                              Contains(fmt::format("(grad.outlier; {} so far)", skipped + 1)));
    CHECK(t.steps_done() == k + 1);
    if (outlier) {
      ++skipped;
      CHECK(state_bytes(t) == before);
      CHECK(t.optimizer().steps() == optimizer_steps);
    } else {
      if (count >= W) ++applied_after_warmup;
      CHECK(state_bytes(t) != before);
      CHECK(t.optimizer().steps() == optimizer_steps + 1);
    }
    s = beta * s + (1 - beta) * (outlier ? F * m : st.grad_norm);
    ++count;
  }
  CHECK(skips_of(t) == skipped);
  CHECK(t.skipped() == 0);  // the non-finite count is another
  CHECK(t.skipped_updates() == skipped);
  CHECK(t.figure("outlier_skips", -1) == skipped);
  CHECK_THAT(t.summary(), Contains(fmt::format("{} updates skipped for an outlier gradient", skipped)));
  // Not a vacuous run: the rule both skipped and let through steps once it acted.
  CHECK(skipped > 0);
  CHECK(applied_after_warmup > 0);
}

TEST_CASE("grad.outlier: off by default, and a huge factor never skips", "[trainer][outlier]") {
  Trainer off(testing::small_config("matrnn", 6, 3));
  Trainer huge(with_rule(1e30, 2));
  for (int k = 0; k < 10; ++k) {
    CHECK_FALSE(off.step().skipped);
    CHECK_FALSE(huge.step().skipped);
  }
  // The rule that never fires trains exactly as no rule.
  CHECK(testing::same_bits(off.model().params(), huge.model().params()));
}

TEST_CASE("grad.outlier: a run resumed from a checkpoint skips what the uninterrupted run skips, bit for bit",
          "[trainer][outlier]") {
  const Config c = with_rule(1.05, 3);
  Trainer whole(c);
  Trainer first(c);
  for (int k = 0; k < 17; ++k) first.step();
  const std::string dir = temp_dir("resume");
  first.save(dir);
  const TensorFile f = read_safetensors(dir + "/checkpoint.safetensors");
  REQUIRE(f.metadata.count("grad_outlier"));
  auto resumed = Trainer::resume(dir);
  CHECK(skips_of(*resumed) == skips_of(first));
  for (int k = 0; k < 17; ++k) whole.step();
  for (int k = 0; k < 23; ++k) {
    const StepStats a = whole.step(), b = resumed->step();
    INFO("step " << whole.steps_done());
    CHECK(a.skipped == b.skipped);
    CHECK(whole.rule<GradOutlier>()->mean_before() == resumed->rule<GradOutlier>()->mean_before());
  }
  CHECK(skips_of(whole) == skips_of(*resumed));
  CHECK(skips_of(whole) > skips_of(first));  // skips happened after the checkpoint too
  CHECK(state_bytes(whole) == state_bytes(*resumed));
}

TEST_CASE("grad.outlier: a bad factor, window or checkpoint state is refused naming it", "[trainer][outlier][errors]") {
  CHECK_THROWS_WITH(Trainer(with_rule(1.0, 3)), Contains("grad.outlier = 1 must be a factor > 1"));
  CHECK_THROWS_WITH(Trainer(with_rule(-2, 3)), Contains("grad.outlier = -2"));
  CHECK_THROWS_WITH(Trainer(with_rule(2, 1)), Contains("grad.outlier_window = 1 must be ≥ 2"));
  Trainer t(with_rule(2, 3));
  t.step();
  const std::string dir = temp_dir("bad");
  t.save(dir);
  const std::string path = dir + "/checkpoint.safetensors";
  TensorFile f = read_safetensors(path);
  f.metadata["grad_outlier"] = "1 5 0x1p+0";  // more skips than steps counted
  write_safetensors(path, f);
  CHECK_THROWS_WITH(Trainer::resume(dir), Contains("grad_outlier \"1 5 0x1p+0\"") && Contains(path));
}
