// `matmem eval` on a small trained run: a table row for every size asked, in order, and the same numbers as
// CSV (to a file, or to standard output with --csv -).
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string& kSmall = kSmallMatNTM;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  return out;
}
// The table rows: lines whose first word is a whole number, as the first words.
std::vector<std::string> table_sizes(const std::string& output) {
  std::vector<std::string> sizes;
  for (const std::string& line : lines(output)) {
    std::stringstream ss(line);
    std::string first;
    ss >> first;
    if (!first.empty() && first.find_first_not_of("0123456789") == std::string::npos) sizes.push_back(first);
  }
  return sizes;
}

// A run trained a few steps, made once per process.
fs::path trained_run() {
  static const fs::path dir = [] {
    const fs::path d = fresh_dir("eval");
    const CommandResult r = run_matmem("train " + kSmall + " --steps 3 --out run", d);
    INFO(r.output);
    REQUIRE(r.status == 0);
    return d;
  }();
  return dir;
}
}  // namespace

TEST_CASE("eval: one table row per size asked, in order", "[tools][eval]") {
  const fs::path dir = trained_run();
  const CommandResult r = run_matmem("eval --checkpoint run --sizes 2,5,3 --batches 2", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("after 3 steps") && Contains("bits/sequence") && Contains("loss"));
  CHECK(table_sizes(r.output) == std::vector<std::string>{"2", "5", "3"});
}

TEST_CASE("eval: --csv writes a header and one row of five columns per size", "[tools][eval]") {
  const fs::path dir = trained_run();
  const CommandResult r = run_matmem("eval --checkpoint run --sizes 2,4 --batches 2 --csv eval.csv", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const std::vector<std::string> csv = lines(read_file(dir / "eval.csv"));
  REQUIRE(csv.size() == 3);
  CHECK(fields(csv[0]) ==
        std::vector<std::string>{"length", "bits_per_sequence", "bits_per_sequence_min", "bits_per_sequence_max", "loss"});
  for (std::size_t k = 1; k < csv.size(); ++k) {
    const std::vector<std::string> row = fields(csv[k]);
    REQUIRE(row.size() == 5);
    CHECK(row[0] == (k == 1 ? "2" : "4"));
    const double bits = std::stod(row[1]), lo = std::stod(row[2]), hi = std::stod(row[3]), loss = std::stod(row[4]);
    CHECK(lo <= bits);
    CHECK(bits <= hi);
    CHECK(loss > 0);
  }
  // the table still goes to the terminal, with the same sizes
  CHECK(table_sizes(r.output) == std::vector<std::string>{"2", "4"});
}

TEST_CASE("eval: --csv - prints only the CSV", "[tools][eval]") {
  const fs::path dir = trained_run();
  const CommandResult r = run_matmem("eval --checkpoint run --sizes 3 --batches 1 --csv -", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const std::vector<std::string> out = lines(r.output);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "length,bits_per_sequence,bits_per_sequence_min,bits_per_sequence_max,loss");
  CHECK(fields(out[1]).size() == 5);
  CHECK(fields(out[1])[0] == "3");
}

TEST_CASE("eval: bad sizes and a missing checkpoint are refused, naming them", "[tools][eval][errors]") {
  const fs::path dir = trained_run();
  const CommandResult zero = run_matmem("eval --checkpoint run --sizes 2,0", dir);
  CHECK(zero.refused());
  CHECK_THAT(zero.output, Contains("--sizes") && Contains("0 (in 2,0) is not a whole number from 1 to"));
  const CommandResult none = run_matmem("eval --checkpoint nothing_here --sizes 2", dir);
  CHECK(none.refused());
  CHECK_THAT(none.output, Contains("nothing_here"));
}
