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
