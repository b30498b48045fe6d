// The training rules' registry (models/training/rules/registry.hpp): which rules a config turns on, in the
// order the trainer runs them, and that a checkpoint carries every rule's state so that a resumed run's rules
// and parameters equal an uninterrupted run's, bit for bit.
#include "matmem/models/training/rules/registry.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "../small_config.hpp"

using namespace matmem;

namespace {
std::vector<std::string> names(const std::vector<std::unique_ptr<TrainingRule>>& rules) {
  std::vector<std::string> out;
  for (const auto& r : rules) out.emplace_back(r->name());
  return out;
}
// Every rule on: a curriculum that grows, an outlier rule that skips, a decay that fires within a few steps,
// evaluations of held-out batches.
Config every_rule() {
  Config c = testing::small_config("matrnn", 4, 3);
  c.set("curriculum.threshold", "1e9", "test");
  c.set("curriculum.window", "3", "test");
  c.set("grad.outlier", "1.05", "test");
  c.set("grad.outlier_window", "3", "test");
  c.set("lr.solved_below", "1e9", "test");
  c.set("lr.solved_window", "5", "test");
  c.set("eval.interval", "2", "test");  // held-out batches: early stopping's and the best parameters' states
  c.set("eval.batches", "2", "test");
  c.set("eval.patience", "1000", "test");
  return c;
}
// Each rule's checkpoint state, by name (none: "-").
std::vector<std::string> states(const Trainer& t) {
  std::vector<std::string> out;
  for (const auto& r : t.rules()) out.push_back(std::string(r->name()) + "=" + r->state().value_or("-"));
  return out;
}
}  // namespace

TEST_CASE("rules: a config's rules, in the documented order, early stopping and the best parameters always",
          "[training][rules]") {
  const Config plain = testing::small_config("matrnn");
  const auto task = make_task(plain);
  CHECK(names(make_rules(plain, *task)) == std::vector<std::string>{"early_stopping", "best_parameters"});
  const Config all = every_rule();
  CHECK(names(make_rules(all, *task)) ==
        std::vector<std::string>{"curriculum", "grad_outlier", "lr_solved", "early_stopping", "best_parameters"});
  Config two = plain;
  two.set("lr.solved_below", "1", "test");
  two.set("grad.outlier", "2", "test");
  CHECK(names(make_rules(two, *task)) ==
        std::vector<std::string>{"grad_outlier", "lr_solved", "early_stopping", "best_parameters"});
  CHECK(names(Trainer(all).rules()) == names(make_rules(all, *task)));
}

TEST_CASE("rules: every rule's state goes through a checkpoint, and the resumed run equals the uninterrupted one",
          "[training][rules]") {
  const Config c = every_rule();
  Trainer whole(c), first(c);
  for (int k = 0; k < 11; ++k) whole.step(), first.step();
  const std::string dir = testing::temp_dir("matmem_rules_registry_test", "resume");
  first.save(dir);
  const TensorFile f = read_safetensors(dir + "/checkpoint.safetensors");
  for (const auto& r : first.rules())
    if (r->state()) CHECK(f.metadata.at(r->name()) == *r->state());
  auto resumed = Trainer::resume(dir);
  CHECK(states(*resumed) == states(first));
  for (int k = 0; k < 13; ++k) {
    const StepStats a = whole.step(), b = resumed->step();
    CHECK(a.loss == b.loss);
    CHECK(a.skipped == b.skipped);
  }
  CHECK(states(*resumed) == states(whole));
  CHECK(testing::same_bits(whole.model().params(), resumed->model().params()));
  // Not vacuous: the rules' states changed after the checkpoint.
  CHECK(states(whole) != states(first));
}
