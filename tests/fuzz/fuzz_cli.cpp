// Fuzz target: the `matmem` command line, one argument per input line, parsed by the same app main()
// builds (tools/app.cpp) with every subcommand's options and checks, but never run: the app's
// parse-complete callback, which CLI11 calls after every option is parsed and checked and before any
// subcommand's callback, stops the parse there.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "matmem/runtime/error.hpp"
#include "matmem/tests/fuzz/fuzz_input.hpp"
#include "matmem/tools/app.hpp"

namespace {
struct Parsed {};  // thrown once the command line is parsed, so that nothing runs
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = matmem::fuzz::lines(data, size);
  std::vector<const char*> argv{"matmem"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  CLI::App app{"matmem"};
  matmem::tools::add_commands(app);
  app.parse_complete_callback([] { throw Parsed{}; });
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const Parsed&) {
  } catch (const CLI::ParseError&) {
  } catch (const matmem::Error&) {
  }
  return 0;
}
