// The Fashion-MNIST task (models/data/fashion_mnist.hpp) on small IDX files the test writes: the files read
// and concatenated, the seeded split, the frames and targets, the epochs' orders, and a run by epochs that
// evaluates, stops early and resumes bit for bit.
#include "matmem/models/data/fashion_mnist.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include <catch2/catch.hpp>

#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/models/training/rules/early_stopping.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "small_data.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
constexpr std::int64_t kTrainFile = 40, kTestFile = 20;

const std::string& data_dir() {
  static const std::string dir = [] {
    const std::string d = testing::temp_dir("fashion");
    testing::write_fashion_dir(d, kTrainFile, kTestFile);
    return d;
  }();
  return dir;
}

FashionMnistOptions small_options(std::uint64_t split_seed = 1, std::uint64_t seed = 1) {
  FashionMnistOptions o;
  o.data_dir = data_dir();
  o.train = 30, o.validation = 10, o.test = 15, o.batch = 4;
  o.split_seed = split_seed, o.seed = seed;
  return o;
}

// The image index of sample b of a frame, decoded from its pixel (0, 0) = k mod 256 and checked against the rest.
std::int64_t image_of(const Tensor& frame, std::int64_t b, bool flat) {
  const std::int64_t k = std::int64_t(std::lround(frame.at(b, 0, 0) * 255));
  for (std::int64_t i = 0; i < 28; ++i)
    for (std::int64_t j = 0; j < 28; ++j) {
      const double v = flat ? frame.at(b, 0, i * 28 + j) : frame.at(b, i, j);
      REQUIRE(v == Approx(testing::pixel(k, i, j) / 255.0).margin(1e-7));
    }
  return k;
}
}  // namespace

TEST_CASE("load_fashion_mnist concatenates train and t10k files and refuses a broken one by name", "[data][fashion]") {
  const auto set = load_fashion_mnist(data_dir());
  REQUIRE(set->count == kTrainFile + kTestFile);
  for (std::int64_t k : {std::int64_t(0), kTrainFile - 1, kTrainFile, kTrainFile + kTestFile - 1}) {
    CHECK(set->labels[std::size_t(k)] == testing::label(k));
    CHECK(set->pixels[std::size_t(k * 784 + 3 * 28 + 5)] == testing::pixel(k, 3, 5));
  }
  CHECK(load_fashion_mnist(data_dir()) == set);  // cached

  const std::string bad = testing::temp_dir("fashion-bad");
  testing::write_fashion_dir(bad, 8, 4);
  SECTION("labels ≥ 10") {
    testing::write_bytes(bad + "/t10k-labels-idx1-ubyte.gz", testing::gzip_bytes(idx_bytes({4}, {1, 2, 10, 3})));
    CHECK_THROWS_WITH(load_fashion_mnist(bad), Contains("t10k-labels-idx1-ubyte.gz") && Contains("label 10"));
  }
  SECTION("fewer labels than images") {
    testing::write_bytes(bad + "/train-labels-idx1-ubyte.gz", testing::gzip_bytes(idx_bytes({7}, std::vector<std::uint8_t>(7))));
    CHECK_THROWS_WITH(load_fashion_mnist(bad), Contains("train-labels-idx1-ubyte.gz") && Contains("7 labels for the 8"));
  }
  SECTION("a truncated image file") {
    auto z = testing::gzip_bytes(idx_bytes({8, 28, 28}, std::vector<std::uint8_t>(8 * 784)));
    z.resize(z.size() / 2);
    testing::write_bytes(bad + "/train-images-idx3-ubyte.gz", z);
    CHECK_THROWS_WITH(load_fashion_mnist(bad), Contains("train-images-idx3-ubyte.gz") && Contains("truncated"));
  }
  SECTION("a missing directory names the package") {
    CHECK_THROWS_WITH(load_fashion_mnist(bad + "/nowhere"), Contains("nowhere") && Contains("dataset-fashion-mnist"));
  }
}

TEST_CASE("the split: disjoint parts of the configured sizes, fixed by task.split_seed", "[data][fashion]") {
  const FashionMnistTask a(small_options(1)), b(small_options(1)), c(small_options(2));
  std::set<std::int64_t> seen;
  for (Split s : {Split::train, Split::validation, Split::test}) {
    CHECK(a.split_indices(s) == b.split_indices(s));
    for (std::int64_t k : a.split_indices(s)) CHECK(seen.insert(k).second);
  }
  CHECK(a.split_size(Split::train) == 30);
  CHECK(a.split_size(Split::validation) == 10);
  CHECK(a.split_size(Split::test) == 15);
  CHECK(a.split_indices(Split::train) != c.split_indices(Split::train));
  // Both files feed every part: the split is drawn over all 60 images, not the files' own division.
  const auto& test = a.split_indices(Split::test);
  CHECK(std::any_of(test.begin(), test.end(), [](std::int64_t k) { return k < kTrainFile; }));

  FashionMnistOptions too_many = small_options();
  too_many.test = 21;
  CHECK_THROWS_WITH(FashionMnistTask(too_many), Contains("exceeds the 60 images"));
}

TEST_CASE("a part's batch holds its images / 255 as 28x28 (or 1x784) frames and one-hot 1x10 targets", "[data][fashion]") {
  for (bool flat : {false, true}) {
    FashionMnistOptions o = small_options();
    o.flatten = flat;
    const FashionMnistTask task(o);
    CHECK(task.input_rows() == (flat ? 1 : 28));
    CHECK(task.input_cols() == (flat ? 784 : 28));
    Sequence seq;
    task.split_batch_into(Split::validation, 2, 5, seq, DType::f64);
    REQUIRE(seq.inputs.size() == 1);
    REQUIRE(seq.targets.size() == 1);
    CHECK(seq.target_steps == std::vector<std::int64_t>{0});
    CHECK(seq.kind == TargetKind::classes);
    for (std::int64_t b = 0; b < 5; ++b) {
      const std::int64_t k = task.split_indices(Split::validation)[std::size_t(2 + b)];
      CHECK(image_of(seq.inputs[0], b, flat) == k);
      for (std::int64_t j = 0; j < 10; ++j) CHECK(seq.targets[0].at(b, 0, j) == (j == testing::label(k) ? 1.0 : 0.0));
    }
    CHECK_THROWS_WITH(task.split_batch_into(Split::validation, 8, 3, seq), Contains("validation part, which holds 10"));
  }
}

TEST_CASE("epochs: each step's batch is fixed by (seed and step) and an epoch visits the train part once", "[data][fashion]") {
  const FashionMnistTask task(small_options(1, 7)), same(small_options(1, 7)), other(small_options(1, 8));
  REQUIRE(task.steps_per_epoch() == 7);  // ⌊30 / 4⌋
  Rng unused(0);
  Sequence seq, seq2;
  auto batch = [&](const FashionMnistTask& t, std::int64_t step, Sequence& s) {
    t.sample_step_into(step, unused, s, DType::f64);
    std::vector<std::int64_t> images;
    for (std::int64_t b = 0; b < 4; ++b) images.push_back(image_of(s.inputs[0], b, false));
    return images;
  };
  const auto& train = task.split_indices(Split::train);
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    std::set<std::int64_t> seen;
    for (std::int64_t k = 0; k < 7; ++k)
      for (std::int64_t image : batch(task, epoch * 7 + k, seq)) {
        CHECK(std::find(train.begin(), train.end(), image) != train.end());
        CHECK(seen.insert(image).second);
      }
    CHECK(seen.size() == 28);
  }
  // Out of order, from another task object: the same batches.
  CHECK(batch(same, 15, seq2) == batch(task, 15, seq));
  CHECK(batch(same, 2, seq2) == batch(task, 2, seq));
  CHECK(task.epoch_order(0) != task.epoch_order(1));
  CHECK(batch(other, 2, seq2) != batch(task, 2, seq));
}

namespace {
Config fashion_config() {
  Config c;
  c.set("model", "ffn", "test");
  c.set("task", "fashion_mnist", "test");
  c.set("task.data_dir", data_dir(), "test");
  c.set("task.train", "30", "test");
  c.set("task.validation", "10", "test");
  c.set("task.test", "15", "test");
  c.set("model.layers", "3x3", "test");
  c.set("ffn.depth", "2", "test");
  c.set("batch", "4", "test");
  c.set("optimizer", "adam", "test");
  c.set("lr", "0.01", "test");
  c.set("eval.interval", "3", "test");
  c.set("eval.batch", "4", "test");
  return c;
}
}  // namespace

TEST_CASE("a run by epochs evaluates the validation part and resumes bit for bit", "[data][fashion][trainer]") {
  Config c = fashion_config();
  c.set("epochs", "3", "test");
  Trainer whole(c);
  REQUIRE(whole.steps_total() == 21);
  std::vector<double> errors;
  while (whole.steps_done() < whole.steps_total()) {
    whole.step();
    if (whole.evaluated()) errors.push_back(whole.last_validation().error);
  }
  CHECK(errors.size() == 7);
  const SplitResult v = whole.evaluate(Split::validation);
  CHECK(v.count == 10);
  CHECK(v.error == errors.back());
  // The error is a whole number of images out of 10.
  CHECK(v.error * 10 == Approx(std::round(v.error * 10)).margin(1e-9));

  const std::string dir = testing::temp_dir("fashion-resume");
  Trainer first(c);
  for (int k = 0; k < 10; ++k) first.step();  // stops mid-epoch
  first.save(dir);
  auto resumed = Trainer::resume(dir);
  CHECK(resumed->steps_total() == 21);
  while (resumed->steps_done() < resumed->steps_total()) resumed->step();
  for (std::size_t i = 0; i < whole.model().params().size(); ++i) {
    const Tensor& a = whole.model().params()[i].value;
    const Tensor& b = resumed->model().params()[i].value;
    INFO(whole.model().params()[i].name);
    CHECK(std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
  }
  CHECK(resumed->rule<EarlyStoppingRule>()->rule().state() == whole.rule<EarlyStoppingRule>()->rule().state());
}

TEST_CASE("early stopping ends a run, and a resumed run stays stopped", "[data][fashion][trainer]") {
  Config c = fashion_config();
  c.set("steps", "200", "test");
  c.set("eval.patience", "1", "test");
  c.set("eval.interval", "1", "test");
  c.set("lr", "0", "test");  // refused: lr must be > 0
  CHECK_THROWS_WITH(Trainer(c), Contains("lr"));
  // A learning rate this small leaves the validation error where it is: the second evaluation is no better.
  c.set("lr", "1e-12", "test");
  Trainer t(c);
  while (t.steps_done() < t.steps_total() && !t.stopped()) t.step();
  CHECK(t.stopped());
  CHECK(t.steps_done() == 2);
  CHECK(t.rule<EarlyStoppingRule>()->rule().best_step() == 1);
  const std::string dir = testing::temp_dir("fashion-stopped");
  t.save(dir);
  CHECK(Trainer::resume(dir)->stopped());
}

TEST_CASE("the best evaluation's parameters go to best.safetensors and come back on resume", "[data][fashion][trainer]") {
  Config c = fashion_config();
  c.set("epochs", "3", "test");
  c.set("eval.metric", "loss", "test");
  Trainer t(c);
  // Each evaluation's step, validation loss and parameters, as the test sees them.
  std::vector<std::int64_t> steps;
  std::vector<double> losses;
  std::vector<std::vector<Tensor>> params;
  while (t.steps_done() < t.steps_total()) {
    t.step();
    if (!t.evaluated()) continue;
    steps.push_back(t.steps_done());
    losses.push_back(t.last_validation().loss);
    params.emplace_back();
    for (const auto& p : t.model().params()) params.back().push_back(p->value);
  }
  // The first lowest loss, strictly inside the curve: neither the first, the last nor the current parameters.
  const std::size_t argmin = std::size_t(std::min_element(losses.begin(), losses.end()) - losses.begin());
  INFO("validation losses " << Catch::Detail::stringify(losses));
  REQUIRE(argmin > 0);
  REQUIRE(argmin + 1 < losses.size());
  CHECK(t.rule<EarlyStoppingRule>()->rule().best_step() == steps[argmin]);
  CHECK(t.rule<EarlyStoppingRule>()->rule().best() == losses[argmin]);
  const std::vector<Tensor>& at_best = params[argmin];
  const std::string dir = testing::temp_dir("fashion-best");
  t.save(dir);
  REQUIRE(std::filesystem::exists(std::filesystem::path(dir) / "best.safetensors"));
  auto r = Trainer::resume(dir);
  REQUIRE(restore_best(*r));
  for (std::size_t i = 0; i < at_best.size(); ++i) {
    INFO(r->model().params()[i].name);
    CHECK(std::memcmp(at_best[i].raw(), r->model().params()[i].value.raw(), at_best[i].bytes()) == 0);
  }
  CHECK(r->evaluate(Split::validation).loss == losses[argmin]);
  // A run resumed into another directory (a branch) writes the best parameters there too.
  const std::string branch = testing::temp_dir("fashion-best-branch");
  Trainer::resume(dir)->save(branch);
  CHECK(std::filesystem::exists(std::filesystem::path(branch) / "best.safetensors"));

  // A file of another step (a run stopped between the two writes) is not read; one of another kind is refused.
  const std::string best = (std::filesystem::path(dir) / "best.safetensors").string();
  TensorFile f = read_safetensors(best);
  f.metadata["step"] = "999";
  write_safetensors(best, f);
  CHECK_FALSE(restore_best(*Trainer::resume(dir)));
  f.metadata["format"] = "matmem-checkpoint-1";
  write_safetensors(best, f);
  CHECK_THROWS_WITH(Trainer::resume(dir), Contains("best.safetensors") && Contains("matmem-best-1"));
}
