// libmatmem stops a process on a CPU that lacks an extension it was built for, naming it, before any of its
// code runs (runtime/cpu_check.cpp). MATMEM_CPU_MISSING stands in for such a CPU.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "matmem/runtime/isa.hpp"
#include "matmem/version.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;

TEST_CASE("a CPU without the library's instruction set gets a message naming what it lacks, not SIGILL") {
  const std::string isa = matmem::library_isa();
  const auto space = isa.rfind(' ');
  if (space == std::string::npos) {
    std::printf("SKIPPED: libmatmem is a portable build (%s): no extension to miss\n", isa.c_str());
    return;
  }
  const std::string lacking = isa.substr(space + 1);  // the last (most recent) extension of the build
  CHECK(matmem::missing_cpu_features().empty());      // this machine built it, so it has them all
  const CommandResult r = run_matmem("--help", fresh_dir("cpu_check"), 20, "", "MATMEM_CPU_MISSING=" + lacking);
  CHECK(r.status == 70);
  CHECK_THAT(r.output, Contains("this CPU lacks " + lacking));
  CHECK_THAT(r.output, Contains(isa));
  CHECK_THAT(r.output, Contains("-DMATMEM_NATIVE=OFF"));
  CHECK_THAT(r.output, !Contains("Usage"));  // stopped before main
}

TEST_CASE("the library reports the version it was built as") {
  CHECK(std::string(matmem::version()) == MATMEM_VERSION_STRING);
}
