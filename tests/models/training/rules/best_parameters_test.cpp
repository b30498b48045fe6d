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
#include <fmt/format.h>

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

// A generated task's held-out batches (eval.interval, eval.batches, eval.seed; models/training/trainer.hpp, 5.).
namespace {
Config copy_with_eval(int interval, int batches, int seed) {
  Config c = testing::small_config("matrnn", 4, 3);
  c.set("eval.interval", std::to_string(interval), "test");
  c.set("eval.batches", std::to_string(batches), "test");
  c.set("eval.seed", std::to_string(seed), "test");
  return c;
}
// The model's mean loss and cost per sequence on `batches` batches drawn by sample_into from Rng(seed), evaluated
// here on a tape of its own.
SplitResult independent_eval(Model& model, const Task& task, int batches, int seed) {
  Rng rng{std::uint64_t(seed)};
  Tape tape(DType::f32);
  Unroller unroller(model, tape);
  NoGrad no_grad(tape);
  std::vector<Sequence> seqs(static_cast<std::size_t>(batches));
  for (Sequence& s : seqs) task.sample_into(rng, s, DType::f32);
  SplitResult r;
  for (const Sequence& s : seqs) {
    const SequenceResult& out = unroller.run(s);
    r.loss += out.loss.item() * double(task.batch());
    r.error += out.bits * double(task.batch());
    r.count += task.batch();
  }
  r.loss /= double(r.count);
  r.error /= double(r.count);
  return r;
}
std::vector<Tensor> values(const Model& model) {
  std::vector<Tensor> out;
  for (const auto& p : model.params()) out.push_back(p->value);
  return out;
}
bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].bytes() != b[k].bytes() || std::memcmp(a[k].raw(), b[k].raw(), a[k].bytes()) != 0) return false;
  return true;
}
}  // namespace

TEST_CASE("held-out batches: every evaluation's cost is that of the same batches drawn from eval.seed",
          "[training][rules][best][held_out]") {
  Trainer t(copy_with_eval(2, 3, 77));
  for (int k = 1; k <= 6; ++k) {
    t.step();
    REQUIRE(t.evaluated() == (k % 2 == 0));
    if (!t.evaluated()) continue;
    const SplitResult expected = independent_eval(t.model(), t.task(), 3, 77);
    CHECK(t.last_validation().count == 9);
    CHECK(t.last_validation().loss == expected.loss);
    CHECK(t.last_validation().error == expected.error);
    const SplitResult again = t.evaluate_held_out();  // the same batches at every evaluation
    CHECK(again.loss == t.last_validation().loss);
  }
  // Another seed draws other batches.
  CHECK(independent_eval(t.model(), t.task(), 3, 78).loss != t.last_validation().loss);
}

TEST_CASE("held-out batches: evaluating changes nothing in training", "[training][rules][best][held_out]") {
  Trainer with(copy_with_eval(1, 2, 5)), without(testing::small_config("matrnn", 4, 3));
  for (int k = 0; k < 8; ++k) CHECK(with.step().loss == without.step().loss);
  CHECK(testing::same_bits(with.model().params(), without.model().params()));
  CHECK_FALSE(without.evaluated());
  CHECK(without.evaluate_held_out().count == 0);  // eval.interval 0: no held-out batches
}

TEST_CASE("held-out batches: the best parameters are those of the step with the lowest held-out cost",
          "[training][rules][best][held_out]") {
  Config c = copy_with_eval(1, 2, 9);
  c.set("lr", "0.05", "test");  // a curve that goes up and down
  Trainer t(c);
  std::vector<double> costs;
  std::vector<std::vector<Tensor>> kept;
  for (int k = 0; k < 30; ++k) {
    t.step();
    REQUIRE(t.evaluated());
    costs.push_back(t.last_validation().error);
    kept.push_back(values(t.model()));
  }
  std::size_t argmin = 0;
  for (std::size_t k = 1; k < costs.size(); ++k)
    if (costs[k] < costs[argmin]) argmin = k;
  INFO("held-out costs " << Catch::Detail::stringify(costs));
  REQUIRE(argmin + 1 < costs.size());  // the best is not the last
  const BestParameters& best = *t.rule<BestParameters>();
  CHECK(best.best_step() == std::int64_t(argmin + 1));
  CHECK(best.best() == costs[argmin]);
  CHECK(same(best.tensors(), kept[argmin]));
  CHECK(t.figure("best_step", 0) == double(argmin + 1));  // what the command writes into validation.csv
  CHECK(t.figure("best", 0) == costs[argmin]);
  REQUIRE(restore_best(t));
  CHECK(same(values(t.model()), kept[argmin]));
}

TEST_CASE("held-out batches: a resumed run keeps the best and chooses as the uninterrupted one, bit for bit",
          "[training][rules][best][held_out]") {
  Config c = copy_with_eval(1, 2, 9);
  c.set("lr", "0.05", "test");
  c.set("eval.patience", "100", "test");
  Trainer whole(c), first(c);
  for (int k = 0; k < 12; ++k) whole.step(), first.step();
  const std::string dir = testing::temp_dir("matmem_best_parameters_test", "resume");
  first.save(dir);
  REQUIRE(std::filesystem::exists(dir + "/best.safetensors"));
  auto resumed = Trainer::resume(dir);
  const BestParameters &a = *whole.rule<BestParameters>(), &b = *resumed->rule<BestParameters>();
  CHECK(b.best_step() == a.best_step());
  CHECK(b.best() == a.best());
  CHECK(same(b.tensors(), a.tensors()));
  for (int k = 0; k < 18; ++k) {
    whole.step(), resumed->step();
    CHECK(resumed->last_validation().loss == whole.last_validation().loss);
  }
  CHECK(b.best_step() == a.best_step());
  CHECK(b.best() == a.best());
  CHECK(same(b.tensors(), a.tensors()));
  CHECK(resumed->rule<EarlyStoppingRule>()->rule().state() == whole.rule<EarlyStoppingRule>()->rule().state());
  CHECK(testing::same_bits(whole.model().params(), resumed->model().params()));
}

TEST_CASE("held-out batches: eval.batches and eval.seed out of range are refused naming the key",
          "[training][rules][best][held_out][errors]") {
  CHECK_THROWS_WITH(Trainer(copy_with_eval(1, 0, 1)), Contains("eval.batches = 0 must be from 1 to"));
  CHECK_THROWS_WITH(Trainer(copy_with_eval(1, 100001, 1)), Contains("eval.batches = 100001"));
  CHECK_THROWS_WITH(Trainer(copy_with_eval(1, 2, -1)), Contains("eval.seed = -1 must be ≥ 0"));
  CHECK(Config().integer("eval.seed") != 2024);  // not `matmem eval`'s default seed (tools/eval_command.cpp)
}

TEST_CASE("early stopping says when it stops a run, and the checkpoint says the run stopped, as earlier ones did",
          "[training][rules][early]") {
  Config c = copy_with_eval(1, 2, 9);
  c.set("lr", "0.05", "test");
  c.set("eval.patience", "1", "test");
  Trainer t(c);
  std::vector<std::string> said;
  for (int k = 0; k < 200 && !t.stopped(); ++k) {
    t.step();
    for (std::string& line : t.take_messages()) said.push_back(line);
  }
  REQUIRE(t.stopped());
  REQUIRE(said.size() == 1);
  CHECK_THAT(said[0], Contains(fmt::format("step {}: no better for 1 evaluations: stopping early", t.steps_done())));
  const std::string dir = testing::temp_dir("matmem_best_parameters_test", "stopped");
  t.save(dir);
  const TensorFile f = read_safetensors(dir + "/checkpoint.safetensors");
  CHECK(Trainer::stopped_in(f.metadata));
  // A checkpoint of an earlier version: no "stopped", early stopping's own state says it.
  std::map<std::string, std::string> earlier = f.metadata;
  earlier.erase("stopped");
  CHECK(Trainer::stopped_in(earlier));
  EarlyStopping going(5);
  going.record(10, 1.0);
  earlier["early_stopping"] = going.state();
  CHECK_FALSE(Trainer::stopped_in(earlier));
  earlier.erase("early_stopping");
  CHECK_FALSE(Trainer::stopped_in(earlier));
}
