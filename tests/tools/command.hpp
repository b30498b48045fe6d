// Runs the built `matmem` binary as a user would, for the tests of tools/: the command's exit status and
// everything it printed (standard output and error together).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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
// (e.g. "mpirun -np 2") starts it; `env` adds variables to its environment ("NAME='value' ...").
inline CommandResult run_matmem(const std::string& args, const std::filesystem::path& dir, int seconds = 60,
                                const std::string& launcher = "", const std::string& env = "") {
  const std::string line = "cd '" + dir.string() + "' && OPENBLAS_NUM_THREADS=1 " + env + " timeout " +
                           std::to_string(seconds) + " " + launcher + " '" MATMEM_BINARY "' " + args + " 2>&1";
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

// The launcher of the tests' MPI jobs: 2 ranks on this machine, as root too (CI runs as root).
inline const std::string kMpirun2 = "mpirun --allow-run-as-root --oversubscribe -np 2";

// `matmem ARGS` started in `dir` (by `launcher`, if given) without waiting, its output to `log` in `dir`: the
// process id (of the launcher's process, when there is one), to stop or kill it.
inline pid_t start_matmem(const std::string& args, const std::filesystem::path& dir, const std::string& log,
                          const std::string& launcher = "") {
  const std::string line = "cd '" + dir.string() + "' && exec env OPENBLAS_NUM_THREADS=1 " + launcher + " '" +
                           MATMEM_BINARY "' " + args + " > '" + log + "' 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Waits until `path` exists, for at most `seconds`; whether it does.
inline bool wait_for_file(const std::filesystem::path& path, int seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(seconds)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
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

// How many times `what` occurs in `text`.
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A run's metrics.csv without its seconds column: what the run learned, step by step.
inline std::string metrics_without_seconds(const std::filesystem::path& run) {
  std::ifstream in(run / "metrics.csv");
  std::string line, out;
  while (std::getline(in, line)) {
    const std::size_t a = line.find(','), b = line.find(',', a + 1);
    out += line.substr(0, a) + line.substr(b) + "\n";
  }
  return out;
}

}  // namespace matmem::testing
