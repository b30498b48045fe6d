// The subcommands of `matmem`; each adds itself (options and callback) to the app.
#pragma once

namespace CLI {
class App;
}

namespace matmem::tools {
void add_train_command(CLI::App& app);      // tools/train_command.cpp
void add_gradcheck_command(CLI::App& app);  // tools/gradcheck_command.cpp
void add_bench_command(CLI::App& app);      // tools/bench_command.cpp
void add_eval_command(CLI::App& app);       // tools/eval_command.cpp
void add_sweep_command(CLI::App& app);      // tools/sweep_command.cpp
void add_gradients_command(CLI::App& app);  // tools/gradients_command.cpp
}  // namespace matmem::tools
