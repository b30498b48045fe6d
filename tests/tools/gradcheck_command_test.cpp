// `matmem gradcheck`: the sample sizes a user asks for are the ones checked, and a failing op fails the command.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "matmem/ops/registry.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;

namespace {
// The element counts of the passing table rows for `op` at `size` in the command's output (one per row).
std::vector<long> rows(const std::string& output, const std::string& op, const std::string& size) {
  std::vector<long> elements;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    std::string name, label, result;
    long n = 0;
    double abs_err = 0, rel_err = 0;
    if (row >> name >> label >> n >> abs_err >> rel_err >> result && name == op && label == size && result == "pass")
      elements.push_back(n);
  }
  return elements;
}

// What the library's gradcheck of `op` at `size` checks: the command must run these very samples.
long library_elements(const std::string& op, matmem::SampleSize size) {
  const matmem::OpEntry* entry = matmem::find_op(op);
  REQUIRE(entry);
  return matmem::gradcheck_op(*entry, size).elements_checked;
}
}  // namespace

TEST_CASE("gradcheck checks one op at the small, large and lanes sizes by default", "[tools][gradcheck]") {
  const CommandResult r = run_matmem("gradcheck --op memory_read_write", fresh_dir("gradcheck"), 120);
  INFO(r.output);
  CHECK(r.status == 0);
  using S = matmem::SampleSize;
  CHECK(rows(r.output, "memory_read_write", "small") == std::vector{library_elements("memory_read_write", S::small)});
  CHECK(rows(r.output, "memory_read_write", "large") == std::vector{library_elements("memory_read_write", S::large)});
  CHECK(rows(r.output, "memory_read_write", "lanes") == std::vector{library_elements("memory_read_write", S::lanes)});
  CHECK_THAT(r.output, Contains("3 checks, 0 failed"));
}

TEST_CASE("gradcheck --size lanes checks the batch-19 samples only", "[tools][gradcheck]") {
  const CommandResult r = run_matmem("gradcheck --op cosine_similarity --size lanes", fresh_dir("gradcheck"), 120);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(rows(r.output, "cosine_similarity", "lanes") ==
        std::vector{library_elements("cosine_similarity", matmem::SampleSize::lanes)});
  CHECK(rows(r.output, "cosine_similarity", "small").empty());
  CHECK_THAT(r.output, Contains("1 checks, 0 failed"));
}

TEST_CASE("gradcheck refuses an unknown op or size, naming it", "[tools][gradcheck]") {
  const auto dir = fresh_dir("gradcheck");
  const CommandResult op = run_matmem("gradcheck --op no_such_op", dir, 30);
  CHECK(op.refused());
  CHECK_THAT(op.output, Contains("no op named no_such_op"));
  const CommandResult size = run_matmem("gradcheck --size huge", dir, 30);
  CHECK(size.refused());
  CHECK_THAT(size.output, Contains("--size: huge not in {small,large,lanes,all}"));
}
