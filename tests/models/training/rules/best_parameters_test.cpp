// The best-parameters rule (models/training/rules/best_parameters.hpp): its checkpoint state, best.safetensors
// written and read back only for the step the state names, and checkpoints of earlier versions (the step and
// score in early_stopping's state) read.
#include "matmem/models/training/rules/best_parameters.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include <catch2/catch.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/models/training/rules/early_stopping.hpp"
#include "matmem/models/training/rules/registry.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "../small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// The model's first parameter's first value names the step it was kept at.
void mark(Model& model, double step) { model.params().begin()->get()->value.set(0, step); }
double marked(const Model& model) { return model.params().begin()->get()->value.get(0); }
}  // namespace

TEST_CASE("best parameters: the state names the best step and score, exactly, and bad states are refused",
          "[training][rules][best]") {
  const Config c = testing::small_config("matrnn");
  const auto task = make_task(c);
  const auto model = make_model(c, *task, DType::f32);
  BestParameters best;
  CHECK_FALSE(best.state());  // no evaluation: nothing saved
  best.update(*model, 0.1, 7);
  best.update(*model, 0.3, 9);
  REQUIRE(best.state());
  BestParameters back;
  back.set_state(best.state(), 9);
  CHECK(back.best_step() == 7);
  CHECK(back.best() == 0.1);  // hexadecimal: the same double
  CHECK(back.state() == best.state());
  for (const char* bad : {"", "7", "x 0x1p-1", "-1 0x1p-1", "10 0x1p-1", "7 nan", "7 0x1p-1 3"}) {
    INFO("state \"" << bad << "\"");
    CHECK_THROWS_WITH(back.set_state(std::string(bad), 9), Contains("best_parameters"));
  }
}

TEST_CASE("best parameters: best.safetensors is written once per best and read back only for the state's step",
          "[training][rules][best]") {
  const Config c = testing::small_config("matrnn");
  const auto task = make_task(c);
  const auto model = make_model(c, *task, DType::f32);
  const std::string dir = testing::temp_dir("matmem_best_parameters_test", "files");
  const std::string file = dir + "/best.safetensors";
  BestParameters best;
  best.save_files(dir, *model, c);
  CHECK_FALSE(std::filesystem::exists(file));  // nothing kept yet
  mark(*model, 3);
  best.update(*model, 0.5, 3);
  mark(*model, 4);
  best.save_files(dir, *model, c);
  REQUIRE(std::filesystem::exists(file));
  CHECK(read_safetensors(file).metadata.at("step") == "3");
  BestParameters back;
  back.set_state(best.state(), 4);
  back.load_files(dir, *model);
  REQUIRE(back.restore(*model));
  CHECK(marked(*model) == 3);
  // A file of another step (written after the checkpoint the state comes from) is not read back.
  BestParameters other;
  other.set_state(best_parameters_state(2, 0.75), 4);
  other.load_files(dir, *model);
  CHECK_FALSE(other.has());
  // A file that is not one is refused, naming it.
  TensorFile junk = read_safetensors(file);
  junk.metadata["format"] = "something-else";
  write_safetensors(file, junk);
  CHECK_THROWS_WITH(back.load_files(dir, *model), Contains(file) && Contains("matmem-best-1"));
}

TEST_CASE("best parameters: a checkpoint of earlier versions gives the step and score from early stopping's state",
          "[training][rules][best]") {
  std::map<std::string, std::string> old = {{"early_stopping", "0.25 40 2 0"}};
  upgrade_rule_states(old);
  CHECK(old.at("best_parameters") == best_parameters_state(40, 0.25));
  std::map<std::string, std::string> none = {{"early_stopping", "inf -1 0 0"}};
  upgrade_rule_states(none);
  CHECK_FALSE(none.count("best_parameters"));  // no evaluation yet
  std::map<std::string, std::string> both = {{"early_stopping", "0.25 40 2 0"}, {"best_parameters", "30 0x1p-1"}};
  upgrade_rule_states(both);
  CHECK(both.at("best_parameters") == "30 0x1p-1");  // this version's state wins
}
