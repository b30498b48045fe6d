// Two `matmem train` runs with the same seed and config write the same bytes: metrics.csv (but for its
// seconds column), config.json and the checkpoint, with one thread and with two, for the MatNTM, the MatLSTM
// and the MatDNC; and a MatDNC run resumed from its checkpoint ends as the one never stopped.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
namespace fs = std::filesystem;

namespace {
const std::string kSmall =
    "--set 'model.layers=\"4x3\"' --set task.rows=2 --set task.cols=3 --set task.max_length=4 --set batch=8 "
    "--set ntm.slots=4 --set ntm.slot_rows=2 --set ntm.slot_cols=2 --set dnc.slots=4 --set dnc.slot_rows=2 "
    "--set dnc.slot_cols=2 --set log_every=1 --set checkpoint_every=3";

}  // namespace

TEST_CASE("train: the same seed and config give byte-identical metrics and checkpoints, with 1 and 2 threads",
          "[tools][train][determinism]") {
  const fs::path dir = fresh_dir("determinism");
  for (const char* model : {"matntm", "matlstm", "matdnc"}) {
    for (int threads : {1, 2}) {
      INFO(model << ", " << threads << " threads");
      const std::string args = "train " + kSmall + " --model " + model + " --seed 5 --steps 7 --json --threads " +
                               std::to_string(threads) + " --out ";
      const std::string a = std::string(model) + "-a" + std::to_string(threads),
                        b = std::string(model) + "-b" + std::to_string(threads);
      REQUIRE(run_matmem(args + a, dir).status == 0);
      REQUIRE(run_matmem(args + b, dir).status == 0);
      const std::string metrics = metrics_without_seconds(dir / a);
      CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 8);
      CHECK(metrics == metrics_without_seconds(dir / b));
      CHECK(read_file(dir / a / "config.json") == read_file(dir / b / "config.json"));
      const std::string checkpoint = read_file(dir / a / "checkpoint.safetensors");
      CHECK(checkpoint.size() > 1000);
      CHECK(checkpoint == read_file(dir / b / "checkpoint.safetensors"));
    }
  }
}

TEST_CASE("train: a MatDNC run stopped and resumed writes the bytes of the run never stopped",
          "[tools][train][determinism][dnc]") {
  // The usage, precedence and links restart at zero each sequence; what a resume must restore is the
  // parameters, the optimiser's state and the data stream.
  const fs::path dir = fresh_dir("determinism_dnc_resume");
  const std::string args = "train " + kSmall + " --model matdnc --seed 3 --threads 2 --json";
  REQUIRE(run_matmem(args + " --steps 9 --out whole", dir).status == 0);
  REQUIRE(run_matmem(args + " --steps 6 --out resumed", dir).status == 0);
  REQUIRE(run_matmem("train --resume resumed --steps 9 --threads 2 --json", dir).status == 0);
  CHECK(metrics_without_seconds(dir / "resumed") == metrics_without_seconds(dir / "whole"));
  CHECK(read_file(dir / "resumed" / "checkpoint.safetensors") == read_file(dir / "whole" / "checkpoint.safetensors"));
}
