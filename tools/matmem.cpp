// matmem: the command-line tool. Each subcommand lives in its own file and adds itself to the app.
#include <unistd.h>

#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/app.hpp"

namespace {
// OpenBLAS reads two settings only as it is loaded, before main, so matmem restarts itself once with them set
// (each only where the environment leaves it unset):
// - OPENBLAS_NUM_THREADS=1: OpenBLAS starts a worker thread per core unless told otherwise, and matmem only
//   calls it from one thread: the idle workers then spin next to the kernels (training steps measured 4-16%
//   slower with them on a 2-core machine).
// - OPENBLAS_CORETYPE, when OpenBLAS took this CPU for a Prescott (blas::fitting_core): a CPU model newer than
//   the library runs its SSE3 kernels otherwise (SGEMM at a fifth of its rate on an AVX-512 Xeon).
void restart_with_blas_settings(char** argv) {
  const bool threads = !std::getenv("OPENBLAS_NUM_THREADS");
  const char* core = std::getenv("OPENBLAS_CORETYPE") ? nullptr : matmem::blas::fitting_core();
  if (!threads && !core) return;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);  // the binary's own path, so the
  if (n <= 0) return;                                                   // process keeps its name
  self[n] = '\0';
  if (threads) setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (core) setenv("OPENBLAS_CORETYPE", core, 1);
  execv(self, argv);  // returns only if it failed: carry on as we are
}
}  // namespace

int main(int argc, char** argv) {
  restart_with_blas_settings(argv);
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
