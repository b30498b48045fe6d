// `matmem train` driven to overflow by a huge learning rate: with nonfinite=stop (the default) it stops at
// the first NaN step naming the step and the op, with nonfinite=skip it skips and counts such steps (in its
// output, metrics.csv and the checkpoint) until more than nonfinite.max_skips. No checkpoint holds a NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem;
using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// lr 1e20: the first update makes the parameters about 1e20, and the second step's forward overflows.
const std::string kOverflowing =
    "train --model matrnn --set 'model.layers=\"4x3\"' --set task.rows=2 --set task.cols=3 --set task.max_length=3 "
    "--set batch=2 --set log_every=1 --set checkpoint_every=1 --set lr=1e20 --out run ";

bool all_finite(const TensorFile& f) {
  for (const auto& [name, t] : f.tensors)
    for (std::int64_t k = 0; k < t.numel(); ++k)
      if (!std::isfinite(t.get(k))) return false;
  return true;
}
}  // namespace

TEST_CASE("train: nonfinite=stop stops at the first NaN step naming the step and the op, saving nothing non-finite",
          "[tools][train][nonfinite]") {
  const fs::path dir = fresh_dir("nonfinite_stop");
  const CommandResult r = run_matmem(kOverflowing + "--steps 10", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("step 2: the loss is not finite; anomaly: op") &&
                           Contains("nothing was updated and no checkpoint was written") &&
                           Contains("`--set nonfinite=skip` skips such steps"));
  const TensorFile f = read_safetensors((dir / "run/checkpoint.safetensors").string());
  CHECK(f.metadata.at("step") == "1");
  CHECK(all_finite(f));
}

TEST_CASE("train: nonfinite=skip skips and counts NaN steps and stops past nonfinite.max_skips",
          "[tools][train][nonfinite]") {
  const fs::path dir = fresh_dir("nonfinite_skip");
  const CommandResult r = run_matmem(kOverflowing + "--steps 10 --set nonfinite=skip --set nonfinite.max_skips=3", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("step 2 skipped (1 of at most 3): the loss is not finite; anomaly: op") &&
                           Contains("step 4 skipped (3 of at most 3)") &&
                           Contains("step 5: the loss is not finite") &&
                           Contains("4 steps were skipped for a NaN/Inf, more than nonfinite.max_skips = 3: stopping"));
  const std::string metrics = read_file(dir / "run/metrics.csv");
  CHECK_THAT(metrics, Contains("frames,skipped,xent_bits\n1,") && Contains("\n4,") && !Contains("\n5,"));
  CHECK_THAT(metrics, Contains(",nan,nan,nan,nan,3,nan\n"));  // step 4: no finite step to average, 3 skipped
  const TensorFile f = read_safetensors((dir / "run/checkpoint.safetensors").string());
  CHECK(f.metadata.at("step") == "4");
  CHECK(f.metadata.at("nonfinite_skips") == "3");
  CHECK(all_finite(f));

  // Within the limit the run finishes and reports the count.
  const fs::path dir2 = fresh_dir("nonfinite_skip_done");
  const CommandResult done = run_matmem(kOverflowing + "--steps 6 --set nonfinite=skip --json", dir2);
  CHECK(done.status == 0);
  CHECK_THAT(done.output, Contains("\"skipped\":5"));
}
