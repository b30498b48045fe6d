// `matmem bench machine`: this core's caches, peaks and bandwidth, printed and written to --csv.
#include <catch2/catch.hpp>

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
