#include "matmem/tools/app.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "matmem/models/plugin.hpp"
#include "matmem/tools/capacity_command.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/plot/commands.hpp"

namespace matmem::tools {

void load_command_plugins(int argc, char** argv) {
  load_plugins_from_environment();
  for (int k = 1; k < argc && argv[k][0] == '-'; ++k) {
    const std::string arg = argv[k];
    if (arg == "--plugin" && k + 1 < argc) load_plugin(argv[++k]);
    else if (arg.starts_with("--plugin=")) load_plugin(arg.substr(9));
  }
  if (const std::string all = loaded_plugin_paths(); !all.empty()) ::setenv("MATMEM_PLUGINS", all.c_str(), 1);
}

void add_commands(CLI::App& app) {
  app.require_subcommand(1);
  // Loaded by main() before the app is built (load_command_plugins), so that every subcommand's choices and
  // registries hold the plugin's names; listed here for --help and so that the parser accepts it.
  static std::vector<std::string> plugins;
  app.add_option("--plugin", plugins,
                 "Load the plugin (a shared library made with MATMEM_PLUGIN, models/plugin.hpp) at this path before "
                 "the command: its models, tasks, config keys and ops (repeatable; MATMEM_PLUGINS lists more, "
                 "separated by ':')")
      ->type_name("PATH")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_train_command(app);
  add_eval_command(app);
  add_sweep_command(app);
  add_gradcheck_command(app);
  add_gradients_command(app);
  add_bench_command(app);
  add_capacity_command(app);
  add_plot_command(app);
  add_inspect_command(app);
}

}  // namespace matmem::tools
