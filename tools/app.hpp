// The `matmem` command's parser: every subcommand with its options and callback. main() (tools/matmem.cpp)
// parses and runs; the command-line fuzzer (tests/fuzz/fuzz_cli.cpp) builds the same app and only parses.
#pragma once

namespace CLI {
class App;
}

namespace matmem::tools {
void add_commands(CLI::App& app);  // tools/app.cpp
}  // namespace matmem::tools
