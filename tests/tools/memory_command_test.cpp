// `matmem train` prints its memory estimate before training and refuses, before allocating, a run that
// would not fit in the machine's memory.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("train: prints the memory estimate before training", "[tools][train][memory]") {
  const fs::path dir = fresh_dir("memory_estimate");
  const CommandResult r = run_matmem(
      "train --model matrnn --set 'model.layers=\"4x3\"' --set task.rows=2 --set task.cols=3 --steps 2 --out run", dir);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("memory: about") && Contains("GiB for the longest sequence (41 time steps × batch 16") &&
                           Contains("GiB available"));
  CHECK(r.output.find("memory: about") < r.output.find("done:"));
}

TEST_CASE("train: the estimate's longest sequence is the task's longest where one size has many lengths",
          "[tools][train][memory]") {
  const fs::path dir = fresh_dir("memory_longest");
  // keep_discard: 7 sub-sequences, 2 keep of 3 matrices and 5 discard of 8, 2·46 + 7 + 1 steps; repeat_copy:
  // 10 + 10·10 + 2.
  const CommandResult keep = run_matmem("train --model matdnc --task keep_discard --steps 1 --out keep", dir);
  REQUIRE(keep.status == 0);
  CHECK_THAT(keep.output, Contains("for the longest sequence (100 time steps × batch 16"));
  const CommandResult repeat = run_matmem(
      "train --model matntm --task repeat_copy --set 'model.layers=\"4x3\"' --steps 1 --out repeat", dir);
  REQUIRE(repeat.status == 0);
  CHECK_THAT(repeat.output, Contains("for the longest sequence (112 time steps × batch 1,"));  // the preset's batch
}

namespace {
// The estimate's KiB of tape per time step and sequence, read from `train`'s memory line.
double tape_kib_per_step(const std::string& output) {
  const std::string tail = " KiB of tape per time step";
  const std::size_t end = output.find(tail);
  REQUIRE(end != std::string::npos);
  const std::size_t start = output.rfind(", ", end);
  return std::stod(output.substr(start + 2, end - start - 2));
}
}  // namespace

TEST_CASE("train: the MatDNC's estimate counts its N×N link matrix a time step", "[tools][train][memory][dnc]") {
  const fs::path dir = fresh_dir("memory_dnc_links");
  double kib[2];
  const int slots[2] = {16, 64};
  for (int k = 0; k < 2; ++k) {
    const CommandResult r = run_matmem("train --model matdnc --task keep_discard --set dnc.slot_rows=1 "
                                       "--set dnc.slot_cols=1 --steps 1 --set dnc.slots=" + std::to_string(slots[k]) +
                                       " --out n" + std::to_string(slots[k]), dir);
    REQUIRE(r.status == 0);
    kib[k] = tape_kib_per_step(r.output);
  }
  // At least the links' growth, 64² − 16² floats; the memory's own growth (48 one-element slots) is far less.
  CHECK(kib[1] - kib[0] >= (64.0 * 64 - 16 * 16) * 4 / 1024);
  // At 512 slots the links, 512² floats a sequence (1 MiB), are the largest state: the micro-batch shrinks to one
  // sequence (micro_batch.state_kib 320), where the memory alone, 512 × 2 × 2 floats, would leave it at 16.
  const CommandResult big = run_matmem("train --model matdnc --task copy --set dnc.slots=512 --set dnc.slot_rows=2 "
                                       "--set dnc.slot_cols=2 --set task.max_length=4 --steps 1 --out n512", dir);
  REQUIRE(big.status == 0);
  CHECK_THAT(big.output, Contains("in micro-batches of 1 (1024 KiB of state)"));
}

TEST_CASE("train: a run that would exceed memory is refused up front, naming what it needs and what there is",
          "[tools][train][memory]") {
  const fs::path dir = fresh_dir("memory_refused");
  const CommandResult r =
      run_matmem("train --set batch=1000000000 --set task.max_length=100000 --steps 2 --out run", dir, 30);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("memory: this run needs about") &&
                           Contains("GiB at its longest sequence (200001 time steps × batch 1000000000), this "
                                    "machine has") &&
                           Contains("GiB available"));
  CHECK_FALSE(fs::exists(dir / "run"));
}

#if !defined(__SANITIZE_ADDRESS__)  // the sanitizer reserves terabytes of address space
TEST_CASE("train: a large batch's run, its closing example included, stays within the micro-batch's memory",
          "[tools][train][memory]") {
  // Batch 256 with 1024 slots trains in micro-batches of 2 (a memory of 1024 × 6 × 6 floats, 144 KiB, per
  // sequence; micro_batch.state_kib); the whole batch at once needs 2 GB. The closing example once ran the whole
  // batch (0.8 GB); under a 600 MB address-space limit that ends in an allocation failure.
  const fs::path dir = fresh_dir("memory_large_batch");
  const CommandResult r = run_matmem("train --model matntm --task copy --steps 2 --set batch=256 "
                                     "--set ntm.slots=1024 --set log_every=2 --out run",
                                     dir, 120, "prlimit --as=629145600");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("in micro-batches of 2 (288 KiB of state)"));
  CHECK_THAT(r.output, Contains("bits wrong in 2 such sequences"));
}
#endif
