// `matmem sweep PLAN`: trains every run of a plan (tools/sweep.hpp), N at a time, each as a `matmem train`
// process of its own writing its directory and its log (DIR/train.log); a worker that finishes takes the
// next run left. Runs already complete are skipped and interrupted ones resumed, so a sweep killed by a
// scheduler is continued by starting it again. At the end, and with --status without training, prints the
// results table and writes it to OUT/results.md and OUT/results.csv.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "runtime/error.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "tools/sweep.hpp"

namespace matmem::tools {
namespace {
namespace fs = std::filesystem;
using namespace sweep;

struct Options {
  std::string plan;
  std::int64_t jobs = 1;
  bool status = false;
};

// This program's own path, so the runs are trained by the same build as the sweep.
std::string self_path() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw Error("sweep: cannot find its own program (/proc/self/exe)");
  return std::string(self, std::size_t(n));
}

// Starts `matmem ARGS` with its output appended to `log`; the child is killed if the sweep dies, so a
// sweep killed by a scheduler leaves no run training on behind the next one.
pid_t start(const std::string& program, const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>("matmem"));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("sweep: cannot start a run: {}", std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the sweep died before the line above
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

std::string quoted_command(const std::vector<std::string>& args) {
  std::string s = "matmem";
  for (const std::string& a : args)
    s += a.find_first_of(" \"'") == std::string::npos ? " " + a : " '" + a + "'";
  return s;
}

// Holds OUT/.sweep.lock while the sweep runs: a second sweep of the same runs is refused, not interleaved.
class Lock {
 public:
  explicit Lock(const fs::path& out) {
    fs::create_directories(out);
    const fs::path path = out / ".sweep.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ < 0) throw Error(fmt::format("sweep: cannot open {}: {}", path.string(), std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw Error(fmt::format("sweep: another sweep is training the runs in {} (it holds {})", out.string(),
                              path.string()));
    }
  }
  ~Lock() { ::close(fd_); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  int fd_ = -1;
};

std::vector<RunResult> results_of(const Plan& plan) {
  std::vector<RunResult> results;
  for (const PlannedRun& r : plan.runs) results.push_back(run_result(r));
  return results;
}

// Trains what is left of the plan with `jobs` processes at a time; returns the number of runs that failed.
int train_left(const Plan& plan, std::int64_t jobs) {
  const std::string program = self_path();
  std::vector<std::size_t> todo;
  std::map<std::size_t, RunState> states;
  for (std::size_t k = 0; k < plan.runs.size(); ++k) {
    const RunState s = run_state(plan.runs[k]);
    if (s.state == State::complete) continue;
    todo.push_back(k);
    states[k] = s;
  }
  fmt::print("sweep {}: {} runs, {} complete, {} to train ({} at a time), into {}\n", plan.file.string(),
             plan.runs.size(), plan.runs.size() - todo.size(), todo.size(), jobs, plan.out.string());
  std::map<pid_t, std::pair<std::size_t, std::chrono::steady_clock::time_point>> running;
  std::size_t next = 0, finished = 0;
  int failed = 0;
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && std::int64_t(running.size()) < jobs) {
      const std::size_t k = todo[next++];
      const PlannedRun& run = plan.runs[k];
      fs::create_directories(run.dir);
      const std::vector<std::string> args = train_arguments(run, states[k]);
      const fs::path log = run.dir / "train.log";
      {
        std::FILE* f = std::fopen(log.c_str(), "a");
        if (f) fmt::print(f, "$ {}\n", quoted_command(args)), std::fclose(f);
      }
      running[start(program, args, log)] = {k, std::chrono::steady_clock::now()};
      fmt::print("  started {} seed {}{}\n", run.name, run.seed,
                 states[k].state == State::interrupted ? fmt::format(" (resuming at step {})", states[k].steps_done)
                                                       : "");
      std::fflush(stdout);
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("sweep: waiting for a run: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto [k, began] = it->second;
    running.erase(it);
    ++finished;
    const PlannedRun& run = plan.runs[k];
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const RunResult r = run_result(run);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok)
      fmt::print("  [{}/{}] {} seed {}: {} steps in {:.0f} s, {:.2f} bits per sequence\n", finished, todo.size(),
                 run.name, run.seed, r.steps_done, secs, r.bits);
    else {
      ++failed;
      fmt::print("  [{}/{}] {} seed {}: FAILED ({}), see {}\n", finished, todo.size(), run.name, run.seed,
                 WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                   : fmt::format("killed by signal {}", WTERMSIG(status)),
                 (run.dir / "train.log").string());
    }
    std::fflush(stdout);
  }
  return failed;
}

void run(const Options& o) {
  const Plan plan = read_plan(o.plan);
  int failed = 0;
  if (!o.status) {
    const Lock lock(plan.out);
    failed = train_left(plan, o.jobs);
  }
  const std::vector<RunResult> results = results_of(plan);
  write_tables(plan, results);
  fmt::print("\n{}\nresults: {}, {}\n", markdown_table(results), (plan.out / "results.md").string(),
             (plan.out / "results.csv").string());
  if (failed > 0) throw Error(fmt::format("sweep: {} of its runs failed; their train.log says why", failed));
}
}  // namespace

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Train every run of a plan (seeds, a grid of config values, named runs), each in its own directory; "
      "started again, it skips complete runs and resumes interrupted ones. Plan format: tools/README.md");
  cmd->add_option("plan", o->plan, "The plan: a JSON file")->required();
  cmd->add_option("--jobs", o->jobs, "Runs trained at once, each a process of its own (default 1)")
      ->check(whole_number(1, kMaxThreads));
  cmd->add_flag("--status", o->status, "Only print (and write) the results table as the runs stand");
  cmd->callback([o] { run(*o); });
}

}  // namespace matmem::tools
