// The registries a plugin adds to (models/registry.hpp, models/training/config.hpp, ops/registry.hpp): a
// registered task is made by make_task and listed when a task is unknown, a registered config key is
// settable and has its default, and every registry refuses a name it holds already.
#include <catch2/catch.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/tasks.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// Registered once per process, whichever case runs first: a second registration is refused.
void register_test_names() {
  static const bool registered = [] {
    register_task("registration_test_copy", [](const Config& c) {
      return std::make_unique<CopyTask>(CopyTaskOptions{2, 2, 1, c.integer("registration_test.length"), 3});
    });
    register_config_key({"registration_test.length", "5", "registration_test_copy: the longest sequence",
                         {.min = 1, .max = 40, .note = "a copy sequence's length"}});
    register_config_key({"registration_test.mode", "\"fast\"", "registration_test_copy: a mode",
                         {.choices = {"fast", "slow", "exact"}}});
    register_config_key({"registration_test.rate", "0.5", "registration_test_copy: a rate", {.min = 0, .above = true}});
    return true;
  }();
  (void)registered;
}
}  // namespace

TEST_CASE("register_task: make_task makes a registered task from the config", "[registry]") {
  register_test_names();
  Config c;
  c.set("task", "registration_test_copy", "test");
  c.set("registration_test.length", "7", "test");
  const std::unique_ptr<Task> t = make_task(c);
  CHECK(std::string(t->name()) == "copy");
  CHECK(t->size_range().second == 7);
  const std::vector<std::string> names = task_names();
  CHECK(std::find(names.begin(), names.end(), "registration_test_copy") != names.end());
}

TEST_CASE("register_task: an unknown task's message lists the registered tasks too", "[registry]") {
  register_test_names();
  Config c;
  c.set("task", "sort", "--task");
  CHECK_THROWS_WITH(make_task(c), Contains("unknown task sort") && Contains("copy") &&
                                      Contains("registration_test_copy"));
}

TEST_CASE("register_config_key: a registered key has its default, is settable and listed", "[registry]") {
  register_test_names();
  Config c;
  CHECK(c.integer("registration_test.length") == 5);
  c.assign("registration_test.length=9", "--set");
  CHECK(c.integer("registration_test.length") == 9);
  CHECK_THROWS_WITH(c.assign("registration_test.length=x", "--set"), Contains("must be an integer"));
  const auto& keys = config_keys();
  CHECK(std::any_of(keys.begin(), keys.end(), [](const ConfigKey& k) { return k.key == "registration_test.length"; }));
}

// A key's range is declared with it (ConfigKey::range) and checked in one place, check_config(), which the
// trainer and make_model run: a plugin's keys are checked as the built-in ones are.
TEST_CASE("check_config: a value outside its key's declared range is refused, naming the key, the value and the range",
          "[registry][config]") {
  register_test_names();
  Config c;
  CHECK_NOTHROW(check_config(c));
  c.set("registration_test.length", "41", "test");
  CHECK_THROWS_WITH(check_config(c), Contains("config: registration_test.length = 41 must be from 1 to 40 (a copy "
                                              "sequence's length)"));
  c.set("registration_test.length", "40", "test");
  CHECK_NOTHROW(check_config(c));
  c.set("registration_test.mode", "quick", "test");
  CHECK_THROWS_WITH(check_config(c), Contains("registration_test.mode = \"quick\" must be \"fast\", \"slow\" or \"exact\""));
  c.set("registration_test.mode", "exact", "test");
  c.set("registration_test.rate", "0", "test");
  CHECK_THROWS_WITH(check_config(c), Contains("registration_test.rate = 0 must be > 0"));
  c.set("registration_test.rate", "1e-9", "test");
  CHECK_NOTHROW(check_config(c));
  c.set("task", "copy", "test");
  const std::unique_ptr<Task> t = make_task(c);
  c.set("clip.state_gradient", "-1", "test");  // a built-in key, refused by make_task and make_model too
  CHECK_THROWS_WITH(check_config(c), Contains("clip.state_gradient = -1 must be ≥ 0"));
  CHECK_THROWS_WITH(make_task(c), Contains("clip.state_gradient = -1 must be ≥ 0"));
  CHECK_THROWS_WITH(make_model(c, *t, DType::f32), Contains("clip.state_gradient = -1 must be ≥ 0"));
}

TEST_CASE("check_config: open and closed ends of a range, and the built-in models' keys, refused by their declarations",
          "[registry][config]") {
  Config c;
  const std::pair<const char*, const char*> cases[] = {
      {"gamma.mu=2", "gamma.mu = 2 must be in (0, 2) (stability)"},  // both ends open
      {"gamma.mu=0", "gamma.mu = 0 must be in (0, 2)"},
      {"lr.step_factor=0", "lr.step_factor = 0 must be in (0, 1]"},
      {"lr.cosine_final=1.5", "lr.cosine_final = 1.5 must be from 0 to 1"},
      {"ntm.write_heads=16", "ntm.write_heads = 16 must be from 0 to 15 (16 heads in all)"},
      {"dnc.slots=5000", "dnc.slots = 5000 must be from 2 to 4096 (the links are N x N per sequence)"},
      {"dnc.mask_floor=1.5", "dnc.mask_floor = 1.5 must be from 0 to 1"},
      {"cln.aggregate=max", "cln.aggregate = \"max\" must be \"mean\", \"attention\" or \"flatten\""},
  };
  for (const auto& [set, message] : cases) {
    INFO(set);
    Config bad = c;
    bad.assign(set, "--set");
    CHECK_THROWS_WITH(check_config(bad), Contains(message));
  }
  c.assign("gamma.mu=1.99", "--set");
  c.assign("lr.step_factor=1", "--set");
  CHECK_NOTHROW(check_config(c));
}

TEST_CASE("registries refuse a name they hold already", "[registry]") {
  register_test_names();
  auto no_task = [](const Config&) -> std::unique_ptr<Task> { return nullptr; };
  CHECK_THROWS_WITH(register_task("copy", no_task), Contains("a task named copy is already registered"));
  CHECK_THROWS_WITH(register_task("registration_test_copy", no_task),
                    Contains("a task named registration_test_copy is already registered"));
  CHECK_THROWS_WITH(register_config_key({"lr", "1", "again"}), Contains("a config key named lr is already registered"));
  CHECK_THROWS_WITH(register_config_key({"registration_test.length", "1", "again"}),
                    Contains("a config key named registration_test.length is already registered"));
  CHECK_THROWS_WITH(register_model("matntm", {}), Contains("a model named matntm is already registered"));
  CHECK_THROWS_WITH(register_model("ntm", {}), Contains("a model named ntm is already registered"));
  CHECK_THROWS_WITH(register_op({"tanh", {}}), Contains("an op named tanh is already registered"));
}

TEST_CASE("register_config_key: a default that is not a JSON boolean, number or string is refused", "[registry]") {
  CHECK_THROWS_WITH(register_config_key({"registration_test.bad", "[1, 2]", "a list"}),
                    Contains("registration_test.bad") && Contains("must be a boolean, a number or a string"));
  CHECK_THROWS_WITH(register_config_key({"registration_test.bad", "{", "broken"}),
                    Contains("registration_test.bad") && Contains("is not JSON"));
}
