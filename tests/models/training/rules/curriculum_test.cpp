// The curriculum of models/training/rules/curriculum.hpp: the largest size drawn grows by one after each window whose
// mean cost is below the threshold, draws at the task's largest size are sample_into's, and the state goes
// through checkpoints.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "matmem/models/training/rules/curriculum.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "../small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// Copy sequences of 1..4 frames: a sequence of length l has 2l + 1 time steps.
Config copy_with_curriculum(const std::string& threshold, int window, int start = 0) {
  Config c = testing::small_config("matrnn");
  c.set("curriculum.threshold", threshold, "test");
  c.set("curriculum.window", std::to_string(window), "test");
  c.set("curriculum.start", std::to_string(start), "test");
  return c;
}
std::string temp_dir(const std::string& name) { return testing::temp_dir("matmem_curriculum_test", name); }
using testing::same_bits;
// The largest size the run's next step draws.
std::int64_t level_of(const Trainer& t) { return t.rule<Curriculum>()->level(); }
}  // namespace

TEST_CASE("curriculum: the largest size grows by one per window below the threshold, up to the task's largest",
          "[trainer][curriculum]") {
  Trainer t(copy_with_curriculum("1e9", 2));  // every window's cost is below 1e9
  CHECK(level_of(t) == 1);             // the task's smallest length
  std::vector<std::int64_t> levels;
  for (int k = 0; k < 8; ++k) {
    const std::int64_t before = levels.empty() ? 1 : levels.back();
    CHECK(t.step().frames <= 2 * before + 1);  // drawn up to the level before the step: 2l + 1 frames
    levels.push_back(level_of(t));
  }
  CHECK(levels == std::vector<std::int64_t>{1, 2, 2, 3, 3, 4, 4, 4});
}

TEST_CASE("curriculum: it says its level when a run begins and at each growth, and keeps it as a figure",
          "[trainer][curriculum]") {
  Trainer t(copy_with_curriculum("1e9", 2));
  CHECK(t.take_messages() == std::vector<std::string>{"curriculum: length up to 1 (of 4)"});
  std::vector<std::string> said;
  for (int k = 0; k < 4; ++k) {
    t.step();
    for (std::string& line : t.take_messages()) said.push_back(line);
  }
  CHECK(said == std::vector<std::string>{"curriculum: length up to 2 from step 2", "curriculum: length up to 3 from step 4"});
  CHECK(t.figure("curriculum_level", -1) == 3);
  const std::string dir = temp_dir("said");
  t.save(dir);
  auto resumed = Trainer::resume(dir);  // a resumed run says where it begins, not where the first began
  CHECK(resumed->take_messages() == std::vector<std::string>{"curriculum: length up to 3 (of 4)"});
}

TEST_CASE("curriculum: a window's mean cost must be strictly below the threshold, and only draws up to the level",
          "[trainer][curriculum]") {
  // The first window's two steps are the same in every run: its mean decides.
  Trainer probe(copy_with_curriculum("1e9", 2, 2));
  const double mean = (probe.step().bits + probe.step().bits) / 2;
  REQUIRE(mean > 0);
  {
    Trainer at(copy_with_curriculum(fmt::format("{:.17g}", mean), 2, 2));
    at.step(), at.step();
    CHECK(level_of(at) == 2);  // equal is not below
  }
  {
    Trainer above(copy_with_curriculum(fmt::format("{:.17g}", std::nextafter(mean, 1e300)), 2, 2));
    above.step(), above.step();
    CHECK(level_of(above) == 3);
  }
  Trainer never(copy_with_curriculum("1e-300", 3, 2));
  for (int k = 0; k < 30; ++k) CHECK(never.step().frames <= 2 * 2 + 1);  // lengths 1..2 only
  CHECK(level_of(never) == 2);
}

TEST_CASE("curriculum: at the task's largest size a run is the run without a curriculum, bit for bit",
          "[trainer][curriculum]") {
  Trainer with(copy_with_curriculum("0.5", 2, 4)), without(testing::small_config("matrnn"));
  for (int k = 0; k < 6; ++k) CHECK(with.step().loss == without.step().loss);
  CHECK(same_bits(with.model().params(), without.model().params()));
}

TEST_CASE("curriculum: a run resumed mid-window equals the uninterrupted run, level and draws included",
          "[trainer][curriculum]") {
  const Config c = copy_with_curriculum("1e9", 3);
  Trainer whole(c);
  for (int k = 0; k < 10; ++k) whole.step();
  const std::string dir = temp_dir("resume");
  Trainer first(c);
  for (int k = 0; k < 4; ++k) first.step();  // level 2, one step into the second window
  first.save(dir);
  auto resumed = Trainer::resume(dir);
  CHECK(level_of(*resumed) == 2);
  while (resumed->steps_done() < 10) resumed->step();
  CHECK(level_of(*resumed) == level_of(whole));
  CHECK(same_bits(whole.model().params(), resumed->model().params()));
}

TEST_CASE("curriculum: bad settings and checkpoints are refused, naming the key", "[trainer][curriculum][errors]") {
  CHECK_THROWS_WITH(Trainer(copy_with_curriculum("-1", 10)), Contains("curriculum.threshold = -1"));
  CHECK_THROWS_WITH(Trainer(copy_with_curriculum("1", 0)), Contains("curriculum.window = 0"));
  CHECK_THROWS_WITH(Trainer(copy_with_curriculum("1", 10, 5)),
                    Contains("curriculum.start = 5") && Contains("length") && Contains("1..4"));
  Config r = copy_with_curriculum("1", 10);
  r.set("task", "retrieval", "test");
  CHECK_THROWS_WITH(Trainer(r), Contains("task retrieval has no sizes a curriculum can grow"));

  const std::string dir = temp_dir("bad");
  Trainer t(copy_with_curriculum("1e9", 3));
  t.step();
  t.save(dir);
  const std::string path = dir + "/checkpoint.safetensors";
  const TensorFile good = read_safetensors(path);
  for (const char* value : {"", "2", "9 0 0x0p+0", "2 3 0x0p+0", "2 1 nan", "2 1 0x1p+0 x"}) {
    INFO("curriculum = \"" << value << "\"");
    TensorFile f = good;
    f.metadata["curriculum"] = value;
    write_safetensors(path, f);
    CHECK_THROWS_WITH(Trainer::resume(dir), Contains(path) && Contains("curriculum"));
  }
  TensorFile missing = good;
  missing.metadata.erase("curriculum");
  write_safetensors(path, missing);
  CHECK_THROWS_WITH(Trainer::resume(dir), Contains("metadata curriculum is missing"));
  write_safetensors(path, good);
  CHECK(level_of(*Trainer::resume(dir)) == 1);
}
