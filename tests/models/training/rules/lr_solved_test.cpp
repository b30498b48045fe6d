// lr.solved_below = b: at the end of the first window of lr.solved_window applied steps whose mean cost is below
// b, the learning rate is multiplied by lr.solved_factor for the rest of the run (models/training/rules/lr_solved.hpp).
// The tests predict the decay's step from the costs the steps report, check the first decayed SGD step against
// the undecayed one by hand (the same gradient, f times the step), and that a resumed run decays and trains as
// the uninterrupted one, bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "matmem/models/training/rules/lr_solved.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "../small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// The step after which the run's learning rate was decayed; −1: not (yet), or the run has no such rule.
std::int64_t decayed_at(const Trainer& t) {
  const SolvedDecay* rule = t.rule<SolvedDecay>();
  return rule ? rule->decayed_at() : -1;
}
std::string temp_dir(const std::string& name) { return testing::temp_dir("matmem_lr_solved_test", name); }

Config with_decay(Config c, double below, double factor, int window) {
  c.set("lr.solved_below", fmt::format("{}", below), "test");  // the shortest text that reads back exactly
  c.set("lr.solved_factor", fmt::format("{}", factor), "test");
  c.set("lr.solved_window", std::to_string(window), "test");
  return c;
}

// Plain SGD without momentum or clipping: a step is p ← p − lr·g, so a decayed step is f times an undecayed one.
Config plain_sgd() {
  Config c = testing::small_config("matrnn", 5, 3);
  c.set("optimizer", "\"sgd\"", "test");
  c.set("sgd.momentum", "0", "test");
  c.set("clip.value", "0", "test");
  return c;
}

std::vector<std::vector<float>> values(Trainer& t) {
  std::vector<std::vector<float>> out;
  for (const auto& p : t.model().params()) {
    const float* v = p->value.view<float>().data;
    out.emplace_back(v, v + p->value.numel());
  }
  return out;
}
}  // namespace

TEST_CASE("lr.solved_below: the step after the deciding window takes f times the undecayed step", "[trainer][lr_solved]") {
  const double f = 0.25;
  Trainer plain(plain_sgd());
  Trainer decayed(with_decay(plain_sgd(), 1e9, f, 3));  // every window is "solved": the first decides
  for (int k = 1; k <= 3; ++k) {
    const StepStats a = plain.step(), b = decayed.step();
    CHECK(a.loss == b.loss);
    plain.take_messages();
    const std::vector<std::string> said = decayed.take_messages();  // it says so on the deciding step
    CHECK(said.size() == (k == 3 ? 1u : 0u));
    if (k == 3) CHECK_THAT(said[0], Contains("step 3: the mean cost of the last 3 steps is below") &&
                                        Contains("learning rate × 0.25 from here on (lr.solved_below)"));
    CHECK(testing::same_bits(plain.model().params(), decayed.model().params()));
  }
  CHECK(decayed_at(decayed) == 3);
  CHECK(decayed_at(plain) == -1);
  const auto before = values(plain);
  const StepStats a = plain.step(), b = decayed.step();
  CHECK(a.loss == b.loss);  // the same parameters and batch: the same gradient
  CHECK(decayed.take_messages().empty());
  const auto full = values(plain), part = values(decayed);
  int moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i)
    for (std::size_t j = 0; j < before[i].size(); ++j) {
      const double step_full = double(full[i][j]) - before[i][j], step_part = double(part[i][j]) - before[i][j];
      INFO("parameter " << i << " element " << j);
      CHECK(step_part == Approx(f * step_full).epsilon(1e-3).margin(2e-7));
      moved += std::abs(step_full) > 1e-5;
    }
  CHECK(moved > 10);  // not a vacuous comparison of unmoved parameters
}

TEST_CASE("lr.solved_below: the decay comes at the end of the first window whose mean cost is below b",
          "[trainer][lr_solved]") {
  const Config base = testing::small_config("matrnn", 5, 3);
  const int W = 5, windows = 40;
  // The reference run's window means; a run with the rule is the same run until its decay.
  Trainer reference(base);
  std::vector<double> means;
  for (int w = 0; w < windows; ++w) {
    double sum = 0;
    for (int k = 0; k < W; ++k) sum += reference.step().bits;
    means.push_back(sum / W);
  }
  double b = means[0];  // below the lowest of the first 10 windows: a later window must decide
  for (int w = 1; w < 10; ++w) b = std::min(b, means[w]);
  int first = -1;
  for (int w = 10; w < windows && first < 0; ++w)
    if (means[w] < b) first = w;
  REQUIRE(first > 0);  // the small model learns within the run, so some window decides
  Trainer t(with_decay(base, b, 0.5, W));
  for (int k = 0; k < W * windows && decayed_at(t) < 0; ++k) {
    t.step();
    CHECK(t.take_messages().size() == (t.steps_done() == std::int64_t(W) * (first + 1) ? 1u : 0u));
  }
  CHECK(decayed_at(t) == std::int64_t(W) * (first + 1));
}

TEST_CASE("lr.solved_below: off, or a threshold never reached, trains exactly as no rule", "[trainer][lr_solved]") {
  Trainer off(testing::small_config("matrnn", 5, 3));
  Trainer never(with_decay(testing::small_config("matrnn", 5, 3), 1e-30, 0.1, 2));
  for (int k = 0; k < 12; ++k) {
    off.step();
    never.step();
    CHECK(never.take_messages().empty());
  }
  CHECK(decayed_at(never) == -1);
  CHECK(testing::same_bits(off.model().params(), never.model().params()));
}

TEST_CASE("lr.solved_below: a run resumed before or after the decay trains as the uninterrupted one, bit for bit",
          "[trainer][lr_solved]") {
  const Config c = with_decay(testing::small_config("matrnn", 5, 3), 1e9, 0.1, 4);  // decays after step 4
  Trainer whole(c);
  for (int k = 0; k < 12; ++k) whole.step();
  REQUIRE(decayed_at(whole) == 4);
  for (const int at : {3, 6}) {  // in the deciding window, and after the decay
    Trainer first(c);
    for (int k = 0; k < at; ++k) first.step();
    const std::string dir = temp_dir("resume" + std::to_string(at));
    first.save(dir);
    REQUIRE(read_safetensors(dir + "/checkpoint.safetensors").metadata.count("lr_solved"));
    auto resumed = Trainer::resume(dir);
    for (int k = at; k < 12; ++k) resumed->step();
    INFO("resumed after step " << at);
    CHECK(decayed_at(*resumed) == 4);
    CHECK(testing::same_bits(whole.model().params(), resumed->model().params()));
  }
}

TEST_CASE("lr.solved_below: a bad threshold, factor, window or checkpoint state is refused naming it",
          "[trainer][lr_solved][errors]") {
  const Config c = testing::small_config("matrnn", 5, 3);
  CHECK_THROWS_WITH(Trainer(with_decay(c, -1, 0.1, 3)), Contains("lr.solved_below = -1 must be a cost > 0"));
  CHECK_THROWS_WITH(Trainer(with_decay(c, 1, 0, 3)), Contains("lr.solved_factor = 0 must be in (0, 1]"));
  CHECK_THROWS_WITH(Trainer(with_decay(c, 1, 1.5, 3)), Contains("lr.solved_factor = 1.5"));
  CHECK_THROWS_WITH(Trainer(with_decay(c, 1, 0.1, 0)), Contains("lr.solved_window = 0 must be ≥ 1"));
  Trainer t(with_decay(c, 1e-30, 0.1, 4));
  t.step();
  const std::string dir = temp_dir("bad");
  t.save(dir);
  const std::string path = dir + "/checkpoint.safetensors";
  TensorFile f = read_safetensors(path);
  const std::string& state = f.metadata.at("lr_solved");  // one step counted, no decay
  CHECK(state.substr(0, 2) == "1 ");
  CHECK(state.substr(state.size() - 3) == " -1");
  f.metadata["lr_solved"] = "4 0x0p+0 -1";  // a full window left undecided
  write_safetensors(path, f);
  CHECK_THROWS_WITH(Trainer::resume(dir), Contains("lr_solved \"4 0x0p+0 -1\"") && Contains(path));
  f.metadata["lr_solved"] = "1 0x1p+0 7";  // a decay after the checkpoint's step
  write_safetensors(path, f);
  CHECK_THROWS_WITH(Trainer::resume(dir), Contains("lr_solved \"1 0x1p+0 7\""));
  for (const char* malformed : {"1 0x1p+0", "1 0x1p+0 -1 x", "1 0x1p+0x -1", "1x 0x1p+0 -1"}) {
    INFO("lr_solved = \"" << malformed << "\"");
    f.metadata["lr_solved"] = malformed;
    write_safetensors(path, f);
    CHECK_THROWS_WITH(Trainer::resume(dir), Contains("lr_solved") && Contains(path));
  }
}
