// `matmem sweep PLAN`: trains every run of a plan (tools/sweep.hpp), N at a time, each as a `matmem train`
// process of its own writing its directory and its log (DIR/train.log); a worker that finishes takes the
// next run left. Under `mpirun -np K` the workers are the K ranks (on as many machines as the launcher
// gives): rank 0 hands out the runs, and trains one itself, as ranks become ready. Runs already complete are skipped and interrupted ones resumed, so a sweep killed by a
// scheduler is continued by starting it again. At the end, and with --status without training, prints the
// results table and writes it to OUT/results.md and OUT/results.csv.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "matmem/runtime/communicator.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/options.hpp"
#include "matmem/tools/sweep.hpp"

namespace matmem::tools {
namespace {
namespace fs = std::filesystem;
using namespace sweep;

struct Options {
  std::string plan;
  std::int64_t jobs = 1;
  bool status = false;
  std::vector<std::int64_t> seeds;  // train only these of the plan's seeds (empty: all)
  std::vector<std::string> runs;    // and only these of its named runs (empty: all)
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

// The command as a shell takes it, with the plugins the run inherits in MATMEM_PLUGINS (main() sets it to
// those of --plugin and MATMEM_PLUGINS).
std::string quoted_command(const std::vector<std::string>& args) {
  const char* plugins = std::getenv("MATMEM_PLUGINS");
  std::string s = plugins && *plugins ? fmt::format("MATMEM_PLUGINS='{}' matmem", plugins) : "matmem";
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
      throw Error(fmt::format("sweep: another sweep is training the runs in {} (it holds {}); one sweep with "
                              "--jobs N trains N of a plan's runs at once",
                              out.string(), path.string()));
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

// Starts runs as processes of this rank and reports them as they end.
class Runner {
 public:
  Runner(const Plan& plan, int rank, int ranks) : plan_(plan), program_(self_path()), rank_(rank), ranks_(ranks) {}

  pid_t start(std::size_t k) {
    const PlannedRun& run = plan_.runs[k];
    const RunState state = run_state(run);
    fs::create_directories(run.dir);
    const std::vector<std::string> args = train_arguments(run, state);
    const fs::path log = run.dir / "train.log";
    if (std::FILE* f = std::fopen(log.c_str(), "a")) fmt::print(f, "$ {}\n", quoted_command(args)), std::fclose(f);
    const pid_t pid = tools::start(program_, args, log);
    began_[pid] = std::chrono::steady_clock::now();
    fmt::print("  {}started {} seed {}{}\n", who(), run.name, run.seed,
               state.state == State::interrupted ? fmt::format(" (resuming at step {})", state.steps_done) : "");
    std::fflush(stdout);
    return pid;
  }

  // Reports the end of run k, whose process `pid` ended with `status`; false if it failed.
  bool finish(std::size_t k, pid_t pid, int status) {
    const PlannedRun& run = plan_.runs[k];
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_[pid]).count();
    began_.erase(pid);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok) {
      const RunResult r = run_result(run);
      fmt::print("  {}{} seed {}: {} steps in {:.0f} s, {:.4g} {}\n", who(), run.name, run.seed, r.steps_done, secs,
                 r.bits, r.cost_name);
    } else {
      fmt::print("  {}{} seed {}: FAILED ({}), see {}\n", who(), run.name, run.seed,
                 WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                   : fmt::format("killed by signal {}", WTERMSIG(status)),
                 (run.dir / "train.log").string());
    }
    std::fflush(stdout);
    return ok;
  }

 private:
  const Plan& plan_;
  std::string program_;
  int rank_, ranks_;
  std::map<pid_t, std::chrono::steady_clock::time_point> began_;
  std::string who() const { return ranks_ > 1 ? fmt::format("rank {}: ", rank_) : ""; }
};

// The plan's runs of the given seeds and names (all of them where a list is empty); a seed or a name the plan
// does not have is refused, naming the plan's.
template <class T, class Of>
void check_chosen(const Plan& plan, const std::vector<T>& wanted, Of of, const char* option, const char* what) {
  std::vector<T> planned;
  for (const PlannedRun& r : plan.runs)
    if (std::find(planned.begin(), planned.end(), of(r)) == planned.end()) planned.push_back(of(r));
  for (const T& w : wanted)
    if (std::find(planned.begin(), planned.end(), w) == planned.end())
      throw Error(fmt::format("sweep {}: {} has no {} {} (its {}s: {})", option, plan.file.string(), what, w, what,
                              fmt::join(planned, ", ")));
}
Plan chosen_runs(const Plan& plan, const std::vector<std::int64_t>& seeds, const std::vector<std::string>& names) {
  const auto seed_of = [](const PlannedRun& r) { return r.seed; };
  const auto name_of = [](const PlannedRun& r) { return r.name; };
  check_chosen(plan, seeds, seed_of, "--seeds", "seed");
  check_chosen(plan, names, name_of, "--runs", "run");
  const auto left_out = [](const auto& list, const auto& value) {
    return !list.empty() && std::find(list.begin(), list.end(), value) == list.end();
  };
  Plan chosen = plan;
  std::erase_if(chosen.runs, [&](const PlannedRun& r) { return left_out(seeds, r.seed) || left_out(names, r.name); });
  return chosen;
}

// The runs not complete yet, in plan order.
std::vector<std::size_t> runs_left(const Plan& plan, int workers, const char* how, const std::string& which) {
  std::vector<std::size_t> todo;
  for (std::size_t k = 0; k < plan.runs.size(); ++k)
    if (!finished(run_state(plan.runs[k]).state)) todo.push_back(k);
  fmt::print("sweep {}: {} runs{}, {} complete, {} to train ({} {}), into {}\n", plan.file.string(), plan.runs.size(),
             which, plan.runs.size() - todo.size(), todo.size(), workers, how, plan.out.string());
  std::fflush(stdout);
  return todo;
}

// Trains what is left of the plan with `jobs` processes at a time; returns the number of runs that failed.
int train_left(const Plan& plan, std::int64_t jobs, const std::string& which) {
  const std::vector<std::size_t> todo = runs_left(plan, int(jobs), "at a time", which);
  Runner runner(plan, 0, 1);
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0;
  int failed = 0;
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && std::int64_t(running.size()) < jobs) {
      const std::size_t k = todo[next++];
      running[runner.start(k)] = k;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("sweep: waiting for a run: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    failed += !runner.finish(it->second, pid, status);
    running.erase(it);
  }
  return failed;
}

// The messages of a sweep over MPI ranks: a rank ready for a run (carrying the run it finished, 2k + failed,
// or −1), and rank 0's answer (a run's index, or −1: no runs left).
constexpr int kReady = 1, kRun = 2;

// Over the ranks of an MPI job: rank 0 hands out the runs left, one at a time, to whichever rank is ready
// (itself included: it trains a run while it answers the others); every rank trains one run at a time. Returns
// the number of runs that failed (on rank 0; 0 on the others).
int train_left(const Plan& plan, const Communicator& ranks, const std::string& which) {
  Runner runner(plan, ranks.rank(), ranks.size());
  if (ranks.rank() != 0) {
    std::int64_t finished = -1;
    for (;;) {
      ranks.send(0, finished, kReady);
      const std::int64_t k = ranks.receive(0, kRun);
      if (k < 0) return 0;
      const pid_t pid = runner.start(std::size_t(k));
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw Error(fmt::format("sweep: waiting for a run: {}", std::strerror(errno)));
      finished = 2 * k + (runner.finish(std::size_t(k), pid, status) ? 0 : 1);
    }
  }
  const std::vector<std::size_t> todo = runs_left(plan, ranks.size(), "ranks, a run each at a time", which);
  std::size_t next = 0;
  int stopped = 0, failed = 0;
  pid_t own = -1;
  std::size_t own_run = 0;
  while (next < todo.size() || own > 0 || stopped < ranks.size() - 1) {
    bool idle = true;
    if (own < 0 && next < todo.size()) {
      own_run = todo[next++];
      own = runner.start(own_run);
    }
    for (int from; (from = ranks.waiting(kReady)) >= 0;) {
      const std::int64_t done = ranks.receive(from, kReady);
      if (done >= 0) failed += int(done % 2);
      const bool more = next < todo.size();
      ranks.send(from, more ? std::int64_t(todo[next++]) : -1, kRun);
      stopped += !more;
      idle = false;
    }
    int status = 0;
    if (own > 0 && ::waitpid(own, &status, WNOHANG) == own) {
      failed += !runner.finish(own_run, own, status);
      own = -1;
      idle = false;
    }
    if (idle) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return failed;
}

// Refuses to train where a run already trained (complete or interrupted) was trained with settings the plan no
// longer gives it: resumed, it would go on with its own, and a complete one's row would stand for a plan it was
// not trained with. Nothing is trained or replaced.
// With --status the same runs are listed as a note and the table printed.
void check_unchanged(const Plan& plan, bool status) {
  std::vector<std::string> changed;
  for (const PlannedRun& r : plan.runs)
    if (const std::vector<std::string> c = changed_settings(r); !c.empty())
      changed.push_back(fmt::format("  {} seed {} ({}): {}", r.name, r.seed, (r.dir / "config.json").string(),
                                    fmt::join(c, ", ")));
  if (changed.empty()) return;
  if (status) {
    fmt::print("note: {} of the runs were trained with settings the plan no longer gives them (a sweep refuses to "
               "train them):\n{}\n",
               changed.size(), fmt::join(changed, "\n"));
    return;
  }
  throw Error(fmt::format("sweep: {}: {} of its runs were trained with settings the plan no longer gives them:\n{}\n"
                          "Give the plan the runs' values to go on with them, or move their directories away to "
                          "train them afresh.",
                          plan.file.string(), changed.size(), fmt::join(changed, "\n")));
}

void run(const Options& o) {
  const Plan plan = read_plan(o.plan);
  const Plan chosen = chosen_runs(plan, o.seeds, o.runs);  // what this sweep trains; the tables are the whole plan's
  check_unchanged(chosen, o.status);
  std::string which;
  if (!o.runs.empty()) which += fmt::format(" of {}", fmt::join(o.runs, ", "));
  if (!o.seeds.empty()) which += fmt::format(" of seeds {}", fmt::join(o.seeds, ", "));
  int failed = 0;
  if (Communicator::launched() && Communicator::world().size() > 1) {  // mpirun -np K, K > 1
    const Communicator& ranks = Communicator::world();
    if (ranks.rank() != 0) {
      if (!o.status) train_left(chosen, ranks, which);
      return;
    }
    if (!o.status) {
      const Lock lock(plan.out);
      failed = train_left(chosen, ranks, which);
    }
  } else if (!o.status) {
    const Lock lock(plan.out);
    failed = train_left(chosen, o.jobs, which);
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
  cmd->add_option("--jobs", o->jobs,
                  "Runs trained at once, each a process of its own (default 1; under `mpirun -np K`, each of the K "
                  "ranks trains one run at a time)")
      ->check(whole_number(1, kMaxThreads));
  cmd->add_flag("--status", o->status, "Only print (and write) the results table as the runs stand");
  cmd->add_option("--seeds", o->seeds,
                  "Train only these of the plan's seeds, e.g. --seeds 7,8 (the results table is still the whole "
                  "plan's)")
      ->delimiter(',')
      ->check(whole_number(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--runs", o->runs,
                  "Train only these of the plan's runs, by the names its results table gives them, e.g. --runs "
                  "masked-lookup or --runs recall/lr=0.0001 (with --seeds, those seeds of them)")
      ->delimiter(',');
  cmd->callback([o] { run(*o); });
}

}  // namespace matmem::tools
