// The picture commands of `matmem`: plot (learning curves) and inspect (one sequence through a trained
// model), and the line `matmem train` ends with.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace matmem::tools {
void add_plot_command(CLI::App& app);     // tools/plot/plot_command.cpp
void add_inspect_command(CLI::App& app);  // tools/plot/inspect_command.cpp
// The last line of `matmem train`, after the line naming its metrics and checkpoint: the command that plots
// them ("plot it: <this program> plot RUN --out RUN/learning_curve.png", the program named as the user can run it).
std::string plot_hint(const std::string& run_dir);
}  // namespace matmem::tools
