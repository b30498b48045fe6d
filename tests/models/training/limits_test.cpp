// Long and large: a 10,000-step unroll trains without overflowing the stack, and a run that would not fit
// in memory is refused before it allocates, with an estimate that matches what a pass really holds.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "matmem/models/training/trainer.hpp"
#include "small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// Copy sequences of exactly `length` matrices (2 length + 1 time steps) of a tiny model.
Config long_config(const std::string& model, int length) {
  Config c = testing::small_config(model, length, 1);
  c.set("model.layers", "\"2x2\"", "test");
  c.set("task.rows", "1", "test");
  c.set("task.cols", "2", "test");
  c.set("task.min_length", std::to_string(length), "test");
  c.set("ntm.slots", "3", "test");
  c.set("ntm.slot_rows", "1", "test");
  c.set("ntm.slot_cols", "2", "test");
  return c;
}

TEST_CASE("a 10,000-step unroll trains one step without overflowing the stack", "[trainer][limits]") {
  for (const char* model : {"matrnn", "matntm"}) {
    INFO(model);
    Trainer t(long_config(model, 5000));
    const StepStats s = t.step();
    CHECK(s.frames == 10001);
    CHECK(std::isfinite(s.loss));
    CHECK(t.steps_done() == 1);
  }
}

TEST_CASE("a run that would exceed memory is refused up front with what it needs and what there is",
          "[trainer][limits]") {
  Config c = testing::small_config("matntm");
  c.set("batch", "100000000", "test");
  c.set("task.max_length", "1000", "test");
  CHECK_THROWS_WITH(Trainer(c), Contains("memory: this run needs about") && Contains("GiB at its longest sequence") &&
                                    Contains("2001 time steps × batch 100000000") && Contains("this machine has") &&
                                    Contains("GiB available"));
  c.set("memory.check", "false", "test");  // the check can be turned off; the estimate stays
  c.set("batch", "4", "test");
  c.set("task.max_length", "4", "test");
  CHECK(Trainer(c).memory_estimate().available > 0);
}

namespace {
// MATMEM_SYSFS_ROOT (runtime/sysfs.hpp) set to a directory for a scope, as it was after.
struct SysfsRoot {
  std::optional<std::string> saved;
  explicit SysfsRoot(const std::string& root) {
    if (const char* v = std::getenv("MATMEM_SYSFS_ROOT")) saved = v;
    ::setenv("MATMEM_SYSFS_ROOT", root.c_str(), 1);
  }
  ~SysfsRoot() {
    if (saved)
      ::setenv("MATMEM_SYSFS_ROOT", saved->c_str(), 1);
    else
      ::unsetenv("MATMEM_SYSFS_ROOT");
  }
};
}  // namespace

TEST_CASE("where a cgroup limits memory, what is available is its limit less its use, and runs are refused by it",
          "[trainer][limits]") {
  const std::filesystem::path root = testing::temp_dir("training_limits", "sysfs-" + std::to_string(::getpid()));
  Config c = testing::small_config("matntm");
  c.set("memory.check", "false", "test");
  double unlimited = 0;
  {
    const SysfsRoot none(root.string());  // no cgroup files: the memory the system has available
    unlimited = Trainer(c).memory_estimate().available;
  }
  REQUIRE(unlimited > 2 << 20);
  // A limit of 9 MiB with 8 MiB of it used: 1 MiB left.
  std::filesystem::create_directories(root / "fs/cgroup");
  std::ofstream(root / "fs/cgroup/memory.max") << (9 << 20) << "\n";
  std::ofstream(root / "fs/cgroup/memory.current") << (8 << 20) << "\n";
  const SysfsRoot cgroup(root.string());
  CHECK(Trainer(c).memory_estimate().available == 1 << 20);
  // A run that fits the machine but not the cgroup is refused.
  c.set("memory.check", "true", "test");
  c.set("batch", "64", "test");
  CHECK_THROWS_WITH(Trainer(c), Contains("memory: this run needs about") &&
                                    Contains("this machine has 0.0 GiB available"));
  // Used beyond its limit: none available. "max" (no limit): the system's.
  std::ofstream(root / "fs/cgroup/memory.current") << (10 << 20) << "\n";
  c.set("memory.check", "false", "test");
  CHECK(Trainer(c).memory_estimate().available == 0);
  std::ofstream(root / "fs/cgroup/memory.max") << "max\n";
  CHECK(Trainer(c).memory_estimate().available > 2 << 20);
}

// The peak of a pass over sequences of `length` (every sequence that long), against the estimate of the same
// run drawing lengths 1 to `length`, which probes lengths 1 and 3 only.
void check_estimate(Config c, int length) {
  c.set("task.min_length", "1", "test");
  c.set("task.max_length", std::to_string(length), "test");
  const MemoryEstimate m = Trainer(c).memory_estimate();
  CHECK(m.longest_frames == 2 * length + 1);
  c.set("task.min_length", std::to_string(length), "test");
  Trainer t(c);
  t.step();
  t.tape().clear();
  CHECK(m.tape_bytes == Approx(double(t.tape().peak_pass_bytes())).epsilon(0.1));
}
}  // namespace

TEST_CASE("the memory estimate matches the tape a pass at the longest sequence holds", "[trainer][limits]") {
  for (const char* model : {"matrnn", "matntm"})
    for (int batch : {3, 32}) {
      INFO(model << " batch " << batch);
      check_estimate(testing::small_config(model, 12, batch), 12);
    }
  // The paper's MatNTM at batch 64, whose passes hold more than Tape::kRecomputeAbove: the probes must not
  // recompute where a run's first pass saves.
  INFO("paper's matntm, batch 64");
  Config c;
  c.set("batch", "64", "test");
  check_estimate(c, 6);
}
