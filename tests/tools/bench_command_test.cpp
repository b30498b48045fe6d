// `matmem bench machine`: this core's caches, peaks and bandwidth, printed and written to --csv; `bench train
// --threads`: where a step's time goes between its parts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("bench machine: caches, both peaks and the bandwidth at each working set, also as CSV",
          "[tools][bench]") {
  const fs::path dir = fresh_dir("bench_machine");
  const CommandResult r = run_matmem("bench machine --csv machine.csv", dir, 120);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("caches: L1d ") && Contains("L2 ") && Contains("multiply-add loop ") &&
                           Contains("SGEMM 1024^3 "));
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
  double limited = 0, at_limits = 0, sgemm = 0, stream = 0, fma = 0;
  REQUIRE(std::sscanf(r.output.c_str() + at,
                      "  op kinds with a limit: %lf µs a step, %lf at their limits (%*d%%)\n  limits: GEMM ops' FLOPs "
                      "at the SGEMM peak (%lf GFLOP/s); memory ops' traffic at the best streaming rate within the "
                      "L2 (%lf GB/s) or their FLOPs at the multiply-add peak (%lf GFLOP/s)",
                      &limited, &at_limits, &sgemm, &stream, &fma) == 5);
  CHECK(stream > 0);
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
    // The FLOPs (time × rate) at the SGEMM peak for a GEMM op; for a memory op at least at the multiply-add peak.
    const double at_peak = time * rate / (op == "mat" || op == "projections" ? sgemm : fma);
    if (op == "mat" || op == "projections")
      CHECK(limit == Approx(at_peak).epsilon(0.02).margin(0.2));
    else
      CHECK(limit >= at_peak * 0.98 - 0.2);
  }
  CHECK(limited == Approx(times).margin(1));
  CHECK(at_limits == Approx(limits).margin(1));
  CHECK(cells("ntm_addressing").size() == 7);  // no limit set
}
