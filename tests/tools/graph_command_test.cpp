// `matmem train --model cln --task graph`: the whole graph one batch, the validation split after every step,
// early stopping keeping the best parameters, the held-out accuracy at the end; `matmem eval` by part.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// A small graph: 300 nodes of 3 classes, 60 words; states 2x3, height 2.
const std::string kSmallGraph =
    "--model cln --task graph --set task.graph.nodes=300 --set task.graph.classes=3 --set task.graph.words=60 "
    "--set task.graph.topic_words=10 --set task.graph.test=100 --set task.graph.validation=50 "
    "--set model.layers=2x3 --set cln.height=2";
}  // namespace

TEST_CASE("train: cln on the graph task reports validation and test accuracy and stops early", "[tools][graph]") {
  const fs::path dir = fresh_dir("graph_train");
  // A learning rate too small to lower the validation loss much after the first steps, patience 2.
  const CommandResult r =
      run_matmem("train " + kSmallGraph + " --steps 40 --set eval.patience=2 --set lr=1e-1 --out g", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("validation accuracy") && Contains("test accuracy") && Contains("stopped early"));
  CHECK(fs::exists(dir / "g/validation.csv"));
  CHECK(fs::exists(dir / "g/checkpoint.safetensors"));
  CHECK(fs::exists(dir / "g/best.safetensors"));
  const CommandResult e = run_matmem("eval --checkpoint g", dir);
  INFO(e.output);
  REQUIRE(e.status == 0);
  CHECK_THAT(e.output, Contains("best validation loss") && Contains("validation") && Contains("test"));
  const CommandResult last = run_matmem("eval --checkpoint g --last", dir);
  REQUIRE(last.status == 0);
  CHECK_THAT(last.output, Contains("the last parameters"));
}

TEST_CASE("train: the graph task refuses a split batch, naming the key", "[tools][graph]") {
  const fs::path dir = fresh_dir("graph_refused");
  const CommandResult r = run_matmem("train " + kSmallGraph + " --steps 2 --set micro_batch=16 --out g", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("micro_batch = 16"));
}
