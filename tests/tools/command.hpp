// Runs the built `matmem` binary as a user would, for the tests of tools/: the command's exit status and
// everything it printed (standard output and error together).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace matmem::testing {

struct CommandResult {
  int status = -1;  // the exit status; -1 if the command did not exit normally
  std::string output;
  bool timed_out() const { return status == 124; }  // timeout(1)'s status
  // Refused: it stopped at once with an error, neither finishing nor running on.
  bool refused() const { return status > 0 && !timed_out(); }
};

// `matmem ARGS`, run by the shell in `dir` with OPENBLAS_NUM_THREADS=1 (so it does not restart itself),
// stopped after `seconds` (a command that should have been refused may instead start a long run); `launcher`
// (e.g. "mpirun -np 2") starts it.
inline CommandResult run_matmem(const std::string& args, const std::filesystem::path& dir, int seconds = 60,
                                const std::string& launcher = "") {
  const std::string line = "cd '" + dir.string() + "' && OPENBLAS_NUM_THREADS=1 timeout " + std::to_string(seconds) +
                           " " + launcher + " '" MATMEM_BINARY "' " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = ::popen(line.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int raw = ::pclose(pipe);
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  return r;
}

// `matmem train` options for a MatNTM small enough that a step takes well under a millisecond.
inline const std::string kSmallMatNTM =
    "--set 'model.layers=\"4x3\"' --set task.rows=2 --set task.cols=3 --set task.max_length=3 --set batch=2 "
    "--set ntm.slots=4 --set ntm.slot_rows=2 --set ntm.slot_cols=2";

// This process's own directory under the system's temporary directory, removed when the process ends:
// ctest runs test cases as processes in parallel, and two cases that set up a directory of the same name
// must not remove or overwrite each other's files.
class ProcessDir {
 public:
  ProcessDir()
      : path_(std::filesystem::temp_directory_path() / "matmem_tools_test" / std::to_string(::getpid())) {}
  ~ProcessDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};
inline const ProcessDir process_dir;

// A fresh, empty directory of this process.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = process_dir.path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace matmem::testing
