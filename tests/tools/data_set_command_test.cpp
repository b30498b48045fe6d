// `matmem train` and `matmem eval` on a data set (--task fashion_mnist) as a user runs them, on small IDX files
// the test writes: the preset trains by epochs, validation.csv gets a row per evaluation, eval reports the
// validation and test parts' accuracy, and missing data is refused naming the package.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/tests/models/data/small_data.hpp"
#include "matmem/tests/tools/command.hpp"
#include "matmem/tests/tools/run_files.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
std::string small_run(const std::string& data) {
  return "--model ffn --task fashion_mnist --set task.data_dir=" + data +
         " --set task.train=30 --set task.validation=10 --set task.test=15 --set batch=4 --set ffn.depth=2"
         " --set eval.batch=4 --set eval.interval=3 --set epochs=2";
}
// Early stopping by the validation loss, evaluated after every step; with this seed and learning rate the
// curve rises, falls to its lowest at step 7 and rises again (the test finds that step itself).
const std::string kCurve = " --set eval.metric=loss --set eval.interval=1 --set lr=1e-2 --seed 3";
std::size_t line_count(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}
}  // namespace

TEST_CASE("train and eval on fashion_mnist: epochs, validation.csv, test accuracy", "[tools][data]") {
  const fs::path dir = temp_dir("cli-fashion");
  write_fashion_dir((dir / "data").string(), 40, 20);
  // By the loss, evaluated after every step: a curve whose lowest point is neither its first nor its last.
  const CommandResult t = run_matmem("train " + small_run("data") + kCurve + " --out run", dir);
  INFO(t.output);
  REQUIRE(t.status == 0);
  CHECK_THAT(t.output, Contains("steps 1..14"));  // 2 epochs of ⌊30 / 4⌋ steps
  CHECK(line_count(dir / "run" / "validation.csv") == 15);  // an evaluation after every step, under a header
  const std::vector<Evaluation> curve = validation_curve(dir / "run");
  INFO(curve_text(curve));
  REQUIRE(curve.size() == 14);
  const std::size_t best = first_lowest(curve, true);
  REQUIRE(best > 0);
  REQUIRE(best + 1 < curve.size());
  const std::string step = std::to_string(curve[best].step);
  CHECK_THAT(t.output, Contains("parameters of step " + step + " (best validation loss ") &&
                           Contains("validation accuracy ") && Contains(", test accuracy"));
  // best.safetensors holds that step's parameters, not the last ones of checkpoint.safetensors.
  const auto at_best = parameters_in(dir / "run" / "best.safetensors");
  const auto last = parameters_in(dir / "run" / "checkpoint.safetensors");
  REQUIRE(!at_best.empty());
  CHECK(at_best.size() == last.size());
  CHECK(!changed_parameters(at_best, last).empty());
  const CommandResult e = run_matmem("eval --checkpoint run", dir);
  INFO(e.output);
  REQUIRE(e.status == 0);
  CHECK_THAT(e.output, Contains("validation       10") && Contains("test       15") && Contains("accuracy"));
  CHECK_THAT(e.output, Contains("the parameters of step " + step + " "));
  // Evaluated again, the best parameters give the best row's validation loss; the last ones the last row's.
  const CommandResult csv = run_matmem("eval --checkpoint run --csv -", dir);
  INFO(csv.output);
  REQUIRE(csv.status == 0);
  CHECK_THAT(csv.output, Contains("split,images,loss,error,accuracy\nvalidation,10," + curve[best].loss_text + ",") &&
                             Contains("\ntest,15,"));
  const CommandResult csv_last = run_matmem("eval --checkpoint run --last --csv -", dir);
  INFO(csv_last.output);
  REQUIRE(csv_last.status == 0);
  CHECK_THAT(csv_last.output, Contains("\nvalidation,10," + curve.back().loss_text + ","));
}

TEST_CASE("train on fashion_mnist without its files is refused, naming the directory and the package", "[tools][data]") {
  const fs::path dir = temp_dir("cli-fashion-missing");
  const CommandResult r = run_matmem("train " + small_run("nowhere") + " --out run", dir);
  INFO(r.output);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("nowhere") && Contains("dataset-fashion-mnist"));
}

TEST_CASE("sweep: a data set's run trains its epochs, not the default steps", "[tools][data][sweep]") {
  const fs::path dir = temp_dir("cli-fashion-sweep");
  write_fashion_dir((dir / "data").string(), 40, 20);
  std::ofstream(dir / "plan.json") << R"({"out": "o", "seeds": [1], "set": {"model": "ffn", "task": "fashion_mnist",
    "task.data_dir": ")" + (dir / "data").string() + R"(", "task.train": 30, "task.validation": 10, "task.test": 15,
    "batch": 4, "ffn.depth": 2, "eval.batch": 4, "eval.interval": 3, "epochs": 2}})";
  const CommandResult r = run_matmem("sweep plan.json", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("| 1 | 14/14 |") && Contains("complete"));  // 2 epochs of ⌊30 / 4⌋ steps
}
