// Batch normalisation in training (ffn.norm=batch on small Fashion-MNIST files the test writes): the batch's
// statistics across the trainer's threads, the running statistics (untouched by the memory estimate's probes,
// used in evaluation, restored when a step is undone) and a resumed run bit for bit with them.
#include <cmath>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "matmem/models/training/trainer.hpp"
#include "small_data.hpp"

using namespace matmem;

namespace {
const std::string& data_dir() {
  static const std::string dir = [] {
    const std::string d = testing::temp_dir("fashion-bn");
    testing::write_fashion_dir(d, 48, 20);
    return d;
  }();
  return dir;
}

Config bn_config(int threads) {
  Config c;
  c.set("model", "ffn", "test");
  c.set("task", "fashion_mnist", "test");
  c.set("task.data_dir", data_dir(), "test");
  c.set("task.train", "40", "test");
  c.set("task.validation", "10", "test");
  c.set("task.test", "15", "test");
  c.set("model.layers", "3x4", "test");
  c.set("ffn.depth", "3", "test");
  c.set("ffn.norm", "batch", "test");
  c.set("batch", "8", "test");
  // SGD: a layer's bias before batch norm has no gradient but rounding noise, which Adam would scale up to
  // whole steps of lr, different with 1 and 2 threads.
  c.set("optimizer", "sgd", "test");
  c.set("lr", "0.1", "test");
  c.set("eval.interval", "0", "test");
  c.set("eval.batch", "5", "test");
  c.set("threads", std::to_string(threads), "test");
  return c;
}

// The model's buffers (the running statistics), in creation order.
std::vector<const Parameter*> buffers(Trainer& t) {
  std::vector<const Parameter*> out;
  for (const auto& p : t.model().params())
    if (p->buffer) out.push_back(p.get());
  return out;
}
}  // namespace

TEST_CASE("ffn.norm=batch trains the same with 1 and 2 threads up to rounding, 2 threads bit for bit each time",
          "[trainer][batch_norm]") {
  Trainer one(bn_config(1)), two(bn_config(2)), again(bn_config(2));
  REQUIRE(two.threads() == 2);
  for (int k = 0; k < 6; ++k) {
    const StepStats a = one.step(), b = two.step(), c = again.step();
    CHECK(b.loss == Approx(a.loss).epsilon(1e-5));
    CHECK(c.loss == b.loss);
  }
  const ParameterStore &p1 = one.model().params(), &p2 = two.model().params(), &p3 = again.model().params();
  for (std::size_t i = 0; i < p1.size(); ++i)
    for (std::int64_t e = 0; e < p1[i].value.numel(); ++e) {
      INFO(p1[i].name << " element " << e);
      CHECK(p2[i].value.get(e) == Approx(p1[i].value.get(e)).epsilon(2e-3).margin(1e-4));
      CHECK(p3[i].value.get(e) == p2[i].value.get(e));
    }
}

TEST_CASE("batch norm's running statistics: untouched by the probes, updated by steps, used by evaluation",
          "[trainer][batch_norm]") {
  Trainer t(bn_config(1));
  const auto b = buffers(t);
  REQUIRE(b.size() == 6);  // running mean and variance of 3 layers
  // The memory estimate's probe passes ran in the constructor: the statistics are still 0 and 1.
  for (const Parameter* p : b)
    for (std::int64_t e = 0; e < p->value.numel(); ++e)
      CHECK(p->value.get(e) == (p->name.ends_with("running_var") ? 1.0 : 0.0));
  for (int k = 0; k < 5; ++k) t.step();
  CHECK(b[0]->value.get(0) != 0.0);
  CHECK(b[1]->value.get(0) != 1.0);
  // Evaluation normalises each image by the running statistics alone, so the batches it is cut into do not
  // matter (with the batch's statistics a batch of one would normalise everything to 0); nor does it change them.
  const std::vector<Tensor> before = {b[0]->value, b[1]->value};
  const SplitTask& task = *t.split_task();
  Tape tape(DType::f32);
  const SplitResult by1 = evaluate_split(t.model(), tape, task, Split::validation, 1);
  const SplitResult by5 = evaluate_split(t.model(), tape, task, Split::validation, 5);
  CHECK(by1.loss == Approx(by5.loss).epsilon(1e-6));
  CHECK(by1.error == by5.error);
  CHECK(std::memcmp(before[0].raw(), b[0]->value.raw(), before[0].bytes()) == 0);
  CHECK(std::memcmp(before[1].raw(), b[1]->value.raw(), before[1].bytes()) == 0);
  // And the running statistics are what it reads: moving them changes the loss.
  Parameter& mean = t.model().params().at(b[0]->name);
  mean.value.fill(5.0);
  CHECK(evaluate_split(t.model(), tape, task, Split::validation, 5).loss != Approx(by5.loss).epsilon(1e-3));
}

TEST_CASE("batch norm's running statistics are restored when a step is undone", "[trainer][batch_norm]") {
  Config c = bn_config(1);
  c.set("lr", "1e39", "test");  // beyond float
  c.set("nonfinite", "skip", "test");
  Trainer t(c);
  const StepStats s = t.step();
  REQUIRE(s.skipped);
  for (const Parameter* p : buffers(t))
    for (std::int64_t e = 0; e < p->value.numel(); ++e)
      CHECK(p->value.get(e) == (p->name.ends_with("running_var") ? 1.0 : 0.0));
}

TEST_CASE("a run with batch norm resumed from a checkpoint equals the uninterrupted run bit for bit",
          "[trainer][batch_norm]") {
  for (int threads : {1, 2}) {
    Config c = bn_config(threads);
    c.set("steps", "10", "test");
    Trainer whole(c);
    while (whole.steps_done() < whole.steps_total()) whole.step();
    const std::string dir = testing::temp_dir("fashion-bn-resume-" + std::to_string(threads));
    Trainer first(c);
    for (int k = 0; k < 4; ++k) first.step();
    first.save(dir);
    auto resumed = Trainer::resume(dir);
    while (resumed->steps_done() < resumed->steps_total()) resumed->step();
    const ParameterStore &a = whole.model().params(), &r = resumed->model().params();
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO(a[i].name << " threads " << threads);
      CHECK(std::memcmp(a[i].value.raw(), r[i].value.raw(), a[i].value.bytes()) == 0);
    }
    CHECK(resumed->evaluate(Split::validation).loss == whole.evaluate(Split::validation).loss);
  }
}
