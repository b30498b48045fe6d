// `matmem train --model cln --task graph`: the whole graph one batch, the validation split after every step,
// early stopping keeping the best parameters, the held-out accuracy at the end; `matmem eval` by part.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "matmem/tests/tools/command.hpp"
#include "matmem/tests/tools/run_files.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// A small graph: 300 nodes of 3 classes, 60 words; states 2x3, height 2.
const std::string kSmallGraph =
    "--model cln --task graph --set task.graph.nodes=300 --set task.graph.classes=3 --set task.graph.words=60 "
    "--set task.graph.topic_words=10 --set task.graph.test=100 --set task.graph.validation=50 "
    "--set model.layers=2x3 --set cln.height=2";
// The least validation and test accuracy of the best parameters (3 classes: chance is 1/3).
constexpr double kMinAccuracy = 0.7;
}  // namespace

TEST_CASE("train: cln on the graph task reports validation and test accuracy and stops early", "[tools][graph]") {
  const fs::path dir = fresh_dir("graph_train");
  // Patience 2, the validation loss evaluated after every step (the preset): a learning rate this large
  // overshoots after a few steps, so the lowest loss is neither the first evaluation's nor the last's.
  const CommandResult r =
      run_matmem("train " + kSmallGraph + " --steps 40 --set eval.patience=2 --set lr=1e-1 --out g", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("validation accuracy") && Contains("test accuracy") && Contains("stopped early"));
  CHECK(fs::exists(dir / "g/checkpoint.safetensors"));
  const std::vector<Evaluation> curve = validation_curve(dir / "g");
  INFO(curve_text(curve));
  const std::size_t best = first_lowest(curve, true);
  REQUIRE(best > 0);
  REQUIRE(best + 1 < curve.size());
  CHECK(curve.size() == best + 3);  // stopped at the second evaluation after the best without a better loss
  const std::string step = std::to_string(curve[best].step);
  CHECK_THAT(r.output, Contains("stopped early after step " + std::to_string(curve.back().step) +
                                "; parameters of step " + step + " (best validation loss "));
  // The best parameters classify the held-out nodes well above chance (1/3).
  std::smatch m;
  REQUIRE(std::regex_search(r.output, m, std::regex(R"(validation accuracy ([0-9.]+), test accuracy ([0-9.]+))")));
  CHECK(std::stod(m[1]) >= kMinAccuracy);
  CHECK(std::stod(m[2]) >= kMinAccuracy);
  // best.safetensors holds them, and they are not the last parameters (checkpoint.safetensors).
  const auto at_best = parameters_in(dir / "g/best.safetensors");
  const auto last = parameters_in(dir / "g/checkpoint.safetensors");
  REQUIRE(!at_best.empty());
  CHECK(at_best.size() == last.size());
  CHECK(!changed_parameters(at_best, last).empty());

  const CommandResult e = run_matmem("eval --checkpoint g", dir);
  INFO(e.output);
  REQUIRE(e.status == 0);
  CHECK_THAT(e.output, Contains("the parameters of step " + step + " (best validation loss") &&
                           Contains("validation") && Contains("test"));
  // Evaluated again, the best parameters give the best row's validation loss; the last ones the last row's.
  const CommandResult csv = run_matmem("eval --checkpoint g --csv -", dir);
  INFO(csv.output);
  REQUIRE(csv.status == 0);
  CHECK_THAT(csv.output, Contains("\nvalidation,50," + curve[best].loss_text + ","));
  const CommandResult last_run = run_matmem("eval --checkpoint g --last", dir);
  REQUIRE(last_run.status == 0);
  CHECK_THAT(last_run.output, Contains("the last parameters"));
  const CommandResult last_csv = run_matmem("eval --checkpoint g --last --csv -", dir);
  INFO(last_csv.output);
  REQUIRE(last_csv.status == 0);
  CHECK_THAT(last_csv.output, Contains("\nvalidation,50," + curve.back().loss_text + ","));
}

TEST_CASE("train: the graph task refuses a split batch, naming the key", "[tools][graph]") {
  const fs::path dir = fresh_dir("graph_refused");
  const CommandResult r = run_matmem("train " + kSmallGraph + " --steps 2 --set micro_batch=16 --out g", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("micro_batch = 16"));
}
