// matmem: the command-line tool. Each subcommand lives in its own file and adds itself to the app.
#include <unistd.h>

#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/app.hpp"

namespace {
// OpenBLAS starts a worker thread per core as it is loaded, before main, unless OPENBLAS_NUM_THREADS says
// otherwise, and matmem only calls it from one thread: the idle workers then spin next to the kernels
// (training steps measured 4-16% slower with them on a 2-core machine). So matmem restarts itself once with
// OPENBLAS_NUM_THREADS=1, unless the variable is set already.
void restart_without_blas_workers(char** argv) {
  if (std::getenv("OPENBLAS_NUM_THREADS")) return;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);  // the binary's own path, so the
  if (n <= 0) return;                                                   // process keeps its name
  self[n] = '\0';
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  execv(self, argv);  // returns only if it failed: carry on as we are
}
}  // namespace

int main(int argc, char** argv) {
  restart_without_blas_workers(argv);
  matmem::blas::use_single_thread();
  CLI::App app{"matmem: neural networks whose neurons, states and memories are matrices"};
  try {
    matmem::tools::load_command_plugins(argc, argv);  // before the subcommands are built: they list names
    matmem::tools::add_commands(app);
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
