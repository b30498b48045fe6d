// Batch normalisation in training (ffn.norm=batch on small Fashion-MNIST files the test writes): the batch's
// statistics across the trainer's threads, the running statistics (untouched by the memory estimate's probes,
// used in evaluation, restored when a step is undone) and a resumed run bit for bit with them.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <future>
#include <iostream>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "matmem/models/ffn/ffn.hpp"
#include "matmem/models/registry.hpp"
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
  c.set("optimizer", "sgd", "test");
  c.set("lr", "0.1", "test");
  c.set("eval.interval", "0", "test");
  c.set("eval.batch", "5", "test");
  c.set("threads", std::to_string(threads), "test");
  return c;
}

// A model "ffn_fault_test": ffn with batch norm whose step throws in the training part `fault_part` (-1: none),
// before its first batch_norm, while the other parts wait for that part's sums.
std::atomic<int> fault_part{-1};

class FaultyFFN : public FFN {
 public:
  using FFN::FFN;
  void step(Step& s) override {
    const int part = batch_norm_context().part;
    if (part == fault_part.load()) throw Error(fmt::format("injected fault in part {}", part));
    FFN::step(s);
  }
};

void register_faulty_ffn() {
  static const bool once = [] {
    register_model("ffn_fault_test", [](const Config&, const Task& t, DType dtype, std::uint64_t seed) {
      FFNConfig fc;
      fc.rows = 3, fc.cols = 4, fc.depth = 3, fc.norm = FFNConfig::Norm::batch;
      fc.input_rows = t.input_rows(), fc.input_cols = t.input_cols();
      fc.output_rows = t.output_rows(), fc.output_cols = t.output_cols();
      return std::unique_ptr<Model>(std::make_unique<FaultyFFN>(fc, dtype, seed));
    });
    return true;
  }();
  (void)once;
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
  // With SGD and with Adam: no layer has a bias before batch norm (it would get no gradient but rounding noise,
  // which Adam scales up to steps of lr, different with 1 and 2 threads), so the runs differ by float rounding
  // alone, grown over 6 steps: seen up to 6e-7 (relative) in the loss, and in a parameter 1.2e-5 (Adam,
  // lr 0.01) and 1.0e-4 (SGD, lr 0.1, on first-layer weights; lr times a gradient's rounding).
  for (const char* optimizer : {"sgd", "adam"}) {
    INFO("optimizer " << optimizer);
    auto config = [&](int threads) {
      Config c = bn_config(threads);
      c.set("optimizer", optimizer, "test");
      if (std::string(optimizer) == "adam") c.set("lr", "0.01", "test");
      return c;
    };
    const double margin = std::string(optimizer) == "adam" ? 2.5e-5 : 2e-4;  // twice the differences seen
    Trainer one(config(1)), two(config(2)), again(config(2));
    REQUIRE(two.threads() == 2);
    for (int k = 0; k < 6; ++k) {
      const StepStats a = one.step(), b = two.step(), c = again.step();
      CHECK(b.loss == Approx(a.loss).epsilon(2e-6));
      CHECK(c.loss == b.loss);
    }
    const ParameterStore &p1 = one.model().params(), &p2 = two.model().params(), &p3 = again.model().params();
    for (std::size_t i = 0; i < p1.size(); ++i)
      for (std::int64_t e = 0; e < p1[i].value.numel(); ++e) {
        INFO(p1[i].name << " element " << e);
        CHECK(p2[i].value.get(e) == Approx(p1[i].value.get(e)).epsilon(1e-3).margin(margin));
        CHECK(p3[i].value.get(e) == p2[i].value.get(e));
      }
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

TEST_CASE("a part that fails under batch norm fails the step with its own error, and the trainer goes on",
          "[trainer][batch_norm]") {
  register_faulty_ffn();
  for (int part : {1, 0}) {
    INFO("the fault in part " << part);
    Config c = bn_config(2);
    c.set("model", "ffn_fault_test", "test");
    Trainer t(c);
    REQUIRE(t.threads() == 2);
    t.step();
    std::vector<Tensor> buffers_before;
    for (const auto& p : t.model().params())
      if (p->buffer) buffers_before.push_back(p->value);
    fault_part = part;
    auto failed = std::async(std::launch::async, [&] {
      try {
        t.step();
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    });
    if (failed.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      std::cerr << "a part's failure left the other part waiting for its batch-norm sums (30 s)\n";
      std::_Exit(1);  // the step cannot be joined
    }
    fault_part = -1;
    CHECK(failed.get() == fmt::format("injected fault in part {}", part));
    // The failed step changed no running statistic, and the next steps run.
    std::size_t k = 0;
    for (const auto& p : t.model().params())
      if (p->buffer) {
        CHECK(std::memcmp(buffers_before[k].raw(), p->value.raw(), p->value.bytes()) == 0);
        ++k;
      }
    for (int s = 0; s < 3; ++s) CHECK(std::isfinite(t.step().loss));
  }
}

TEST_CASE("micro-batches with batch norm are refused when the config is read, naming both keys",
          "[trainer][batch_norm]") {
  Config c = bn_config(1);
  c.set("micro_batch", "4", "test");  // of a batch of 8
  try {
    Trainer t(c);
    FAIL("the trainer was made");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("micro_batch = 4") && Catch::Matchers::Contains("ffn.norm = batch"));
  }
  c.set("micro_batch", "8", "test");  // the whole batch: allowed
  CHECK_NOTHROW(Trainer(c));
}
