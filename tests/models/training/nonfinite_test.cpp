// A NaN or Inf in a step's loss, gradient or update changes nothing and is handled as the config key
// `nonfinite` says: "stop" throws naming the step and the op, "skip" counts the step and stops past
// nonfinite.max_skips. A checkpoint never holds a NaN or Inf.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
std::string temp_dir(const std::string& name) { return testing::temp_dir("matmem_nonfinite_test", name); }

using testing::state_bytes;

bool all_finite(const TensorFile& f) {
  for (const auto& [name, t] : f.tensors)
    for (std::int64_t k = 0; k < t.numel(); ++k)
      if (!std::isfinite(t.get(k))) return false;
  return true;
}

// The MatRNN with a learning rate so large that the first update makes the parameters about 1e20 (still
// finite) and the second step's forward overflows.
Config overflowing(const std::string& policy, int max_skips = 10, int threads = 1) {
  Config c = testing::small_config("matrnn", 4, threads > 1 ? 8 : 3);
  c.set("lr", "1e20", "test");
  c.set("threads", std::to_string(threads), "test");
  c.set("nonfinite", policy, "test");
  c.set("nonfinite.max_skips", std::to_string(max_skips), "test");
  return c;
}
}  // namespace

TEST_CASE("nonfinite=stop: an overflowing run stops at the first NaN step, names the op and updates nothing",
          "[trainer][nonfinite]") {
  Trainer t(overflowing("stop"));
  REQUIRE(t.step().skipped == false);  // step 1: the huge update, still finite
  const std::string dir = temp_dir("stop");
  t.save(dir);
  const std::string before = state_bytes(t);
  CHECK_THROWS_WITH(t.step(), Contains("step 2: the loss is not finite") && Contains("anomaly: op") &&
                                  Contains("nothing was updated") && Contains("nonfinite = \"stop\""));
  CHECK(t.steps_done() == 1);
  CHECK(state_bytes(t) == before);
  CHECK(all_finite(read_safetensors(dir + "/checkpoint.safetensors")));
}

TEST_CASE("nonfinite=skip: NaN steps are skipped and counted until more than max_skips, never updating",
          "[trainer][nonfinite]") {
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    Trainer t(overflowing("skip", 3, threads));
    REQUIRE(t.threads() == threads);
    t.step();
    const std::string before = state_bytes(t);
    for (int k = 1; k <= 3; ++k) {
      const StepStats s = t.step();
      CHECK(s.skipped);
      CHECK_THAT(s.nonfinite, Contains("anomaly: op"));
      CHECK(t.skipped() == k);
      CHECK(t.steps_done() == 1 + k);
      CHECK(state_bytes(t) == before);
    }
    const std::string dir = temp_dir("skip" + std::to_string(threads));
    t.save(dir);  // a checkpoint between skips holds the last finite state and the count
    const TensorFile f = read_safetensors(dir + "/checkpoint.safetensors");
    CHECK(all_finite(f));
    CHECK(f.metadata.at("nonfinite_skips") == "3");
    CHECK(Trainer::resume(dir)->skipped() == 3);
    CHECK_THROWS_WITH(t.step(), Contains("step 5") && Contains("4 steps were skipped") &&
                                    Contains("more than nonfinite.max_skips = 3"));
    CHECK(state_bytes(t) == before);
  }
}

TEST_CASE("nonfinite=skip: a skipped step leaves the run as it was and the next finite step trains",
          "[trainer][nonfinite]") {
  Config c = testing::small_config("matrnn");
  c.set("nonfinite", "skip", "test");
  Trainer t(c);
  t.step();
  Tensor& u = t.model().params()[0].value;
  const float kept = u.view<float>().data[0];
  u.view<float>().data[0] = std::numeric_limits<float>::infinity();
  const std::string before = state_bytes(t);
  const std::int64_t optimizer_steps = t.optimizer().steps();
  const StepStats s = t.step();
  CHECK(s.skipped);
  CHECK(state_bytes(t) == before);
  CHECK(t.optimizer().steps() == optimizer_steps);
  u.view<float>().data[0] = kept;
  const std::string restored = state_bytes(t);
  CHECK_FALSE(t.step().skipped);
  CHECK(state_bytes(t) != restored);
  CHECK(t.skipped() == 1);
  CHECK(t.steps_done() == 3);
}

// Under "skip" the optimiser takes an update whole or not at all; under "stop", which ends the run there, in
// place: the error says the model holds the update in part, and no checkpoint can be written of it.
TEST_CASE("an update that overflows is named: under skip it is undone, under stop taken in place and never saved",
          "[trainer][nonfinite]") {
  Config c = testing::small_config("matrnn");
  c.set("lr", "1e39", "test");  // RMSprop's first step moves each parameter by about 4.5 lr: beyond float
  c.set("nonfinite", "skip", "test");
  {
    Trainer t(c);
    REQUIRE(t.optimizer().mode() == UpdateMode::whole);
    const std::string before = state_bytes(t);
    const StepStats s = t.step();
    CHECK(s.skipped);
    CHECK_THAT(s.nonfinite, Contains("the rmsprop update (lr = 1e+39) made parameter") && Contains("non-finite"));
    CHECK(state_bytes(t) == before);
    CHECK(t.optimizer().steps() == 0);
  }
  c.set("nonfinite", "stop", "test");
  Trainer t(c);
  REQUIRE(t.optimizer().mode() == UpdateMode::in_place);
  const std::string before = state_bytes(t);
  CHECK_THROWS_WITH(t.step(), Contains("step 1: the rmsprop update (lr = 1e+39) made parameter") &&
                                  Contains("non-finite") && Contains("taken in place") &&
                                  Contains("no checkpoint was written"));
  CHECK(state_bytes(t) != before);
  CHECK(t.optimizer().steps() == 0);
  CHECK(t.steps_done() == 0);
  const std::string dir = temp_dir("in_place");
  CHECK_THROWS_WITH(t.save(dir), Contains("not written") && Contains("NaN or Inf"));
  CHECK_FALSE(std::filesystem::exists(dir + "/checkpoint.safetensors"));
}

TEST_CASE("a checkpoint is never written with a NaN or Inf", "[trainer][nonfinite]") {
  Trainer t(testing::small_config("matrnn"));
  t.step();
  const std::string dir = temp_dir("save");
  t.save(dir);
  const std::string path = dir + "/checkpoint.safetensors";
  const auto size = std::filesystem::file_size(path);
  const auto time = std::filesystem::last_write_time(path);
  Parameter& p = t.model().params()[1];
  p.value.view<float>().data[0] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(t.save(dir), Contains(path) && Contains("not written") && Contains(p.name) &&
                                     Contains("NaN or Inf"));
  CHECK(std::filesystem::file_size(path) == size);
  CHECK(std::filesystem::last_write_time(path) == time);
  CHECK(all_finite(read_safetensors(path)));
}

TEST_CASE("nonfinite takes stop or skip, and max_skips a count", "[trainer][nonfinite][errors]") {
  Config c = testing::small_config("matrnn");
  c.set("nonfinite", "ignore", "test");
  CHECK_THROWS_WITH(Trainer(c), Contains("nonfinite = \"ignore\" must be \"stop\" or \"skip\""));
  c.set("nonfinite", "skip", "test");
  c.set("nonfinite.max_skips", "-1", "test");
  CHECK_THROWS_WITH(Trainer(c), Contains("nonfinite.max_skips = -1 must be ≥ 0"));
}
