// `matmem train --task data` and `matmem eval` on the user's own sequences (models/data/user_data.hpp), as a
// user runs them, on safetensors parts the test writes: training by epochs, validation and early stopping,
// the test part's figures, and a refusal naming the file.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "matmem/runtime/random.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/models/data/small_data.hpp"
#include "matmem/tests/tools/command.hpp"
#include "matmem/tests/tools/run_files.hpp"

using namespace matmem;
using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// N sequences of T = 6 vector frames 1x4 of random bits; the target at step t is the input of step t − 1,
// so step 0 is masked out, and every odd sequence is 4 steps long (steps 4 and 5 padding, masked out).
void write_part(const fs::path& file, std::int64_t n, std::uint64_t seed) {
  constexpr std::int64_t T = 6, C = 4;
  Rng rng(seed);
  Tensor x(DType::f32, memory(n, T, 1, C)), y(DType::f32, memory(n, T, 1, C)), m(DType::f32, parameter(n, T));
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t length = s % 2 ? 4 : T;
    for (std::int64_t t = 0; t < length; ++t) {
      for (std::int64_t j = 0; j < C; ++j) x.set(x.shape().offset(s, t, 0, j), double(rng.coin()));
      if (t > 0) {
        m.set(m.shape().offset(0, 0, s, t), 1.0);
        for (std::int64_t j = 0; j < C; ++j) y.set(y.shape().offset(s, t, 0, j), x.get(x.shape().offset(s, t - 1, 0, j)));
      }
    }
  }
  TensorFile f;
  f.tensors.emplace("inputs", std::move(x));
  f.tensors.emplace("targets", std::move(y));
  f.tensors.emplace("mask", std::move(m));
  write_safetensors(file.string(), f);
}

const std::string kRun =
    "--model matlstm --task data --set task.data=data --set model.layers=4x4 --set batch=8 --set optimizer=adam "
    "--set lr=0.3 --set eval.batch=8 --set eval.interval=1 --set eval.patience=2 --set eval.metric=loss --seed 2";
}  // namespace

TEST_CASE("train and eval on the user's data: validation, early stopping, the test part", "[tools][data][user-data]") {
  const fs::path dir = temp_dir("cli-user-data");
  fs::create_directories(dir / "data");
  write_part(dir / "data" / "train.safetensors", 48, 1);
  write_part(dir / "data" / "validation.safetensors", 16, 2);
  write_part(dir / "data" / "test.safetensors", 12, 3);
  const CommandResult t = run_matmem("train " + kRun + " --steps 60 --out run", dir, 120);
  INFO(t.output);
  REQUIRE(t.status == 0);
  CHECK_THAT(t.output, Contains("stopped early after step "));
  const std::vector<Evaluation> curve = validation_curve(dir / "run");
  INFO(curve_text(curve));
  REQUIRE(curve.size() >= 3);
  REQUIRE(curve.size() < 60);  // stopped before the last step
  const std::size_t best = first_lowest(curve, true);
  CHECK(best + 3 == curve.size());  // two evaluations without a new best after the best one
  const std::string step = std::to_string(curve[best].step);
  CHECK_THAT(t.output, Contains("parameters of step " + step + " (best validation loss "));
  // The table names the BCE loss and the bit errors per sequence of task.loss = bce.
  const CommandResult table = run_matmem("eval --checkpoint run", dir);
  INFO(table.output);
  REQUIRE(table.status == 0);
  CHECK_THAT(table.output, Contains("sequences        bce   bits/seq") && Contains("test       12"));
  const CommandResult e = run_matmem("eval --checkpoint run --csv -", dir);
  INFO(e.output);
  REQUIRE(e.status == 0);
  // The best parameters again give the best row's validation loss; the test part has its 12 sequences.
  CHECK_THAT(e.output, Contains("split,sequences,loss,error\nvalidation,16," + curve[best].loss_text + ",") &&
                           Contains("\ntest,12,"));
}

TEST_CASE("train on the user's data refuses a part whose tensors disagree, naming the file", "[tools][data][user-data]") {
  const fs::path dir = temp_dir("cli-user-data-bad");
  fs::create_directories(dir / "data");
  write_part(dir / "data" / "train.safetensors", 48, 1);
  TensorFile f = read_safetensors((dir / "data" / "train.safetensors").string());
  f.tensors.at("mask") = Tensor(DType::f32, parameter(40, 6));
  write_safetensors((dir / "data" / "validation.safetensors").string(), f);
  const CommandResult r = run_matmem("train " + kRun + " --steps 5 --out run", dir);
  INFO(r.output);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains(std::string("data: data/validation.safetensors") +
                                ": tensor mask of shape [40, 6], but inputs has shape [48, 6, 1, 4]"));
}

TEST_CASE("train on the user's data refuses a NaN in a target at load, before a step, naming file and index",
          "[tools][data][user-data]") {
  const fs::path dir = temp_dir("cli-user-data-nan");
  fs::create_directories(dir / "data");
  write_part(dir / "data" / "train.safetensors", 48, 1);
  TensorFile f = read_safetensors((dir / "data" / "train.safetensors").string());
  Tensor& y = f.tensors.at("targets");
  y.set(y.shape().offset(40, 3, 0, 2), std::nan(""));
  write_safetensors((dir / "data" / "train.safetensors").string(), f);
  const CommandResult r = run_matmem("train " + kRun + " --steps 100 --out run", dir);
  INFO(r.output);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("data: data/train.safetensors: tensor targets of shape [48, 6, 1, 4] has NaN at index "
                                "[40, 3, 0, 2]: only finite values are read"));
  CHECK_THAT(r.output, !Contains("training matlstm"));  // refused before training starts
  CHECK_FALSE(fs::exists(dir / "run" / "metrics.csv"));
}
