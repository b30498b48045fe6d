#include "matmem/tools/app.hpp"

#include <CLI/CLI.hpp>

#include "matmem/tools/capacity_command.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/plot/commands.hpp"

namespace matmem::tools {

void add_commands(CLI::App& app) {
  app.require_subcommand(1);
  add_train_command(app);
  add_eval_command(app);
  add_sweep_command(app);
  add_gradcheck_command(app);
  add_bench_command(app);
  add_capacity_command(app);
  add_plot_command(app);
  add_inspect_command(app);
}

}  // namespace matmem::tools
