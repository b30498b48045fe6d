// The `matmem` command's parser: every subcommand with its options and callback. main() (tools/matmem.cpp)
// parses and runs; the command-line fuzzer (tests/fuzz/fuzz_cli.cpp) builds the same app and only parses.
#pragma once

namespace CLI {
class App;
}

namespace matmem::tools {
void add_commands(CLI::App& app);  // tools/app.cpp
// Loads the plugins of MATMEM_PLUGINS, then those of every `--plugin PATH` (or --plugin=PATH) among the
// options before the subcommand in argv, and sets MATMEM_PLUGINS to all of them (absolute paths) for the
// processes the command starts. main() calls it before add_commands, so every subcommand sees their names.
void load_command_plugins(int argc, char** argv);  // tools/app.cpp
}  // namespace matmem::tools
