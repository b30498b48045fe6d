// `matmem bench machine`: this core's caches (as /sys, or a MATMEM_SYSFS_ROOT, lists them), peaks and
// bandwidth, printed and written to --csv; `bench train --threads`: where a step's time goes between its parts.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/sysfs.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// `matmem bench machine --csv machine.csv` in `dir`, with `env` (e.g. a MATMEM_SYSFS_ROOT) in its environment;
// its output, once its peaks and its bandwidth at each working set, printed and as CSV, have been checked.
std::string bench_machine(const fs::path& dir, const std::string& env = "") {
  const CommandResult r = run_matmem("bench machine --csv machine.csv", dir, 120, "", env);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("multiply-add loop ") && Contains("SGEMM 1024^3 "));
  std::ifstream csv(dir / "machine.csv");
  std::string line;
  REQUIRE(std::getline(csv, line));
  CHECK(line == "bytes,read_gbs,write_gbs,copy_gbs");
  std::vector<std::vector<double>> rows;
  while (std::getline(csv, line)) {
    std::istringstream in(line);
    std::vector<double> row;
    for (std::string cell; std::getline(in, cell, ',');) row.push_back(std::stod(cell));
    REQUIRE(row.size() == 4);
    rows.push_back(row);
  }
  REQUIRE(rows.size() == 9);
  CHECK(rows.front()[0] == 16 * 1024);
  CHECK(rows.back()[0] == 256.0 * 1024 * 1024);
  for (const auto& row : rows) {
    CHECK(r.output.find(std::to_string(std::int64_t(row[0]) / 1024) + " KiB") != std::string::npos);
    for (int k = 1; k < 4; ++k) CHECK(row[std::size_t(k)] > 0);
  }
#if !defined(__SANITIZE_ADDRESS__)  // instrumented loads run far below any cache's bandwidth
  CHECK(rows.front()[1] > 1.5 * rows.back()[1]);  // reading from L1 beats reading from DRAM
#endif
  return r.output;
}

// The line of bench machine's output that starts with `start`.
std::string line_of(const std::string& output, const std::string& start) {
  const auto at = output.find("\n" + start);
  return at == std::string::npos ? "" : output.substr(at + 1, output.find('\n', at + 1) - at - 1);
}
std::string caches_line(const std::string& output) { return line_of(output, "caches: "); }

// A file of a sysfs tree under `root`, with `text` in it.
void write_sysfs(const fs::path& root, const std::string& file, const std::string& text) {
  fs::create_directories((root / file).parent_path());
  std::ofstream(root / file) << text << "\n";
}
}  // namespace

TEST_CASE("bench machine: this machine's caches as /sys lists them, both peaks and the bandwidth, also as CSV",
          "[tools][bench]") {
  const fs::path dir = fresh_dir("bench_machine");
  const std::string caches = caches_line(bench_machine(dir));
  INFO(caches);
  // A machine (a VM) may list no caches in /sys: the line says so, and the rest is measured all the same.
  if (caches.starts_with("caches: not listed"))
    CHECK(caches == "caches: not listed in " + matmem::sysfs_path("devices/system/cpu/cpu0/cache"));
  else
    CHECK_THAT(caches, Contains("caches: L1d ") && Contains(" KiB (cpus ") && Contains("L2 "));
}

// This test process was not restarted: its OpenBLAS runs the kernels OpenBLAS chose itself (unless the
// environment names some), which the command replaces only where they are the Prescott fallback.
TEST_CASE("bench machine: the command runs OpenBLAS's own kernels, or this CPU's where OpenBLAS took it for a "
          "Prescott, or the ones OPENBLAS_CORETYPE names", "[tools][bench]") {
  const fs::path dir = fresh_dir("bench_machine_kernels");
  if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set && *set) {
    WARN("skipped: OPENBLAS_CORETYPE=" << set << " chose this process's kernels, so what OpenBLAS chooses is unknown");
    return;
  }
  const char* fitting = matmem::blas::fitting_core();
  const std::string own = bench_machine(dir, "env -u OPENBLAS_CORETYPE");
  INFO(own);
  if (fitting)  // OpenBLAS took this CPU for a Prescott: the command restarted itself with the fitting kernels
    CHECK(line_of(own, "OpenBLAS kernels: ") ==
          fmt::format("OpenBLAS kernels: {} (OPENBLAS_CORETYPE={})", fitting, fitting));
  else
    CHECK(line_of(own, "OpenBLAS kernels: ") ==
          fmt::format("OpenBLAS kernels: {} (chosen by OpenBLAS)", matmem::blas::core_name()));
  const std::string named = bench_machine(dir, "OPENBLAS_CORETYPE=Prescott");
  INFO(named);
  CHECK(line_of(named, "OpenBLAS kernels: ") == "OpenBLAS kernels: Prescott (OPENBLAS_CORETYPE=Prescott)");
}

TEST_CASE("bench machine: under a MATMEM_SYSFS_ROOT that lists no caches, says so and measures the rest",
          "[tools][bench]") {
  const fs::path dir = fresh_dir("bench_machine_unlisted"), root = dir / "sysfs";
  fs::create_directories(root);
  const std::string caches = caches_line(bench_machine(dir, "MATMEM_SYSFS_ROOT='" + root.string() + "'"));
  CHECK(caches == "caches: not listed in " + root.string() + "/devices/system/cpu/cpu0/cache");
}

TEST_CASE("bench machine: the caches read under MATMEM_SYSFS_ROOT, data and unified, instruction caches left out",
          "[tools][bench]") {
  const fs::path dir = fresh_dir("bench_machine_listed"), root = dir / "sysfs";
  const std::string cache = "devices/system/cpu/cpu0/cache/";
  const struct {
    const char *index, *level, *type, *size, *cpus;
  } kCaches[] = {{"index0", "1", "Data", "48K", "0,4"},
                 {"index1", "1", "Instruction", "32K", "0,4"},
                 {"index2", "2", "Unified", "2048K", "0,4"},
                 {"index3", "3", "Unified", "36M", "0-7"}};
  for (const auto& c : kCaches) {
    write_sysfs(root, cache + c.index + "/level", c.level);
    write_sysfs(root, cache + c.index + "/type", c.type);
    write_sysfs(root, cache + c.index + "/size", c.size);
    write_sysfs(root, cache + c.index + "/shared_cpu_list", c.cpus);
  }
  const std::string caches = caches_line(bench_machine(dir, "MATMEM_SYSFS_ROOT='" + root.string() + "'"));
  CHECK(caches == "caches: L1d 48 KiB (cpus 0,4), L2 2048 KiB (cpus 0,4), L3 36864 KiB (cpus 0-7)");
}

TEST_CASE("bench train --threads 2: where the step's time goes between its parts", "[tools][bench]") {
  const fs::path dir = fresh_dir("bench_train_parts");
  const CommandResult r = run_matmem("bench train --config ntm-copy --threads 2 --steps 3 --warmup 1", dir, 300);
  REQUIRE(r.status == 0);
  const auto at = r.output.find("ntm-copy: its 2 parts took ");
  REQUIRE(at != std::string::npos);
  const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
  INFO(line);
  int first = 0, second = 0, slowest = 0;
  REQUIRE(std::sscanf(line.c_str(), "ntm-copy: its 2 parts took %d and %d µs a step on their threads (means); the "
                                    "step waited for the slowest part, %d µs", &first, &second, &slowest) == 3);
  CHECK(first > 0);
  CHECK(second > 0);
  CHECK(slowest >= std::max(first, second) - 1);  // the mean of each step's slowest is at least either mean
  CHECK_THAT(line, Contains("ran on one thread or between them"));
  // one thread: no parts
  const CommandResult one = run_matmem("bench train --config ntm-copy --steps 2 --warmup 0", dir, 300);
  REQUIRE(one.status == 0);
  CHECK(one.output.find("parts took") == std::string::npos);
}

TEST_CASE("bench train --set: the closing description is of the step timed, the --set keys on top", "[tools][bench]") {
  const auto dir = fresh_dir("bench_train_set");
  const CommandResult r = run_matmem("bench train --config ntm-copy --steps 1 --warmup 0 --set batch=3", dir, 300);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("  ntm-copy: MatNTM copy: batch 3,") && Contains("(--set batch=3)"));
  CHECK(r.output.find("batch 16") == std::string::npos);
}

TEST_CASE("bench train --profile: the GEMM and memory ops set against the core's limits", "[tools][bench]") {
  const fs::path dir = fresh_dir("bench_train_profile");
  const CommandResult r = run_matmem("bench train --config ntm-copy --steps 3 --warmup 1 --profile", dir, 300);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("limit µs") && Contains("limit/time"));
  // Each row's cells from the op's name on: calls/step, forward, backward, share, MiB/step, GFLOP/s[, limit, ratio].
  auto cells = [&](const std::string& op) {
    const auto at = r.output.find("\n  " + op + " ");
    REQUIRE(at != std::string::npos);
    std::istringstream in(r.output.substr(at + 1, r.output.find('\n', at + 1) - at - 1));
    std::vector<std::string> out;
    for (std::string c; in >> c;) out.push_back(c);
    return out;
  };
  const auto at = r.output.find("  op kinds with a limit: ");
  REQUIRE(at != std::string::npos);
  double limited = 0, at_limits = 0, sgemm = 0, operand_kib = 0, operand = 0, stream = 0, fma = 0;
  REQUIRE(std::sscanf(r.output.c_str() + at,
                      "  op kinds with a limit: %lf µs a step, %lf at their limits (%*d%%)\n  limits: GEMM ops' FLOPs "
                      "at the SGEMM peak (%lf GFLOP/s) or their operands at the streaming rate over the parameters "
                      "and gradients (%lf KiB: %lf GB/s); memory ops' traffic at the best streaming rate within the "
                      "L2 (%lf GB/s) or their FLOPs at the multiply-add peak (%lf GFLOP/s)",
                      &limited, &at_limits, &sgemm, &operand_kib, &operand, &stream, &fma) == 7);
  CHECK(stream > 0);
  CHECK(operand > 0);
  CHECK(operand_kib == Approx(2 * 3592 * 4 / 1024.0).margin(0.5));  // ntm-copy's parameters and gradients
  // The step's op kinds with a limit are these four; the total sums their rows. (No check that a kernel stays
  // under its limit: a peak measured on a busy machine can come out low.)
  double times = 0, limits = 0;
  for (const std::string op : {"mat", "projections", "memory_read_write", "cosine_similarity"}) {
    const std::vector<std::string> c = cells(op);
    INFO(op);
    REQUIRE(c.size() == 9);
    const double time = std::stod(c[2]) + std::stod(c[3]), rate = std::stod(c[6]), limit = std::stod(c[7]);
    times += time;
    limits += limit;
    CHECK(std::stod(c[8]) == Approx(100 * limit / time).margin(1.5));  // the printed ratio, in percent
    // At least the FLOPs (time × rate) at the SGEMM peak for a GEMM op (or its operands at their level's rate,
    // whichever takes longer); for a memory op at least at the multiply-add peak.
    const double at_peak = time * rate / (op == "mat" || op == "projections" ? sgemm : fma);
    CHECK(limit >= at_peak * 0.98 - 0.2);
  }
  CHECK(limited == Approx(times).margin(1));
  CHECK(at_limits == Approx(limits).margin(1));
  CHECK(cells("ntm_addressing_logits").size() == 7);  // no limit set (a step's heads in one call)
}
