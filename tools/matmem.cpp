// matmem: the command-line tool. Each subcommand lives in its own file and adds itself to the app.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "runtime/blas.hpp"
#include "runtime/error.hpp"
#include "tools/capacity_command.hpp"
#include "tools/commands.hpp"

int main(int argc, char** argv) {
  matmem::blas::use_single_thread();
  CLI::App app{"matmem: neural networks whose neurons, states and memories are matrices"};
  app.require_subcommand(1);
  matmem::tools::add_train_command(app);
  matmem::tools::add_eval_command(app);
  matmem::tools::add_gradcheck_command(app);
  matmem::tools::add_bench_command(app);
  matmem::tools::add_capacity_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const matmem::Error& e) {
    fmt::print(stderr, "matmem: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // file system, JSON or allocation failures from below
    fmt::print(stderr, "matmem: {}\n", e.what());
    return 1;
  }
  return 0;
}
