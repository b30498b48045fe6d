// Checkpoints survive a crash at any point: `matmem train` writing a checkpoint every step is killed
// (SIGKILL) over and over at random moments, and each time the run directory holds a complete checkpoint
// that loads and that `matmem train --resume` continues. A checkpoint write that fails (a file-size limit,
// a full disk, a file it cannot create) names the file, stops the run and leaves the previous checkpoint.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem;
using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// A checkpoint after every step of a small MatNTM: one is written all the time.
const std::string kSmall = kSmallMatNTM + " --set log_every=1 --set checkpoint_every=1";

// `matmem ARGS` (shell words, as run_matmem takes them) in `cwd`, started in a child process with its output
// discarded; the shell execs matmem, so the pid is matmem's.
pid_t start_matmem(const fs::path& cwd, const std::string& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(127);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    const std::string line = "exec '" MATMEM_BINARY "' " + args;
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// `matmem train --resume DIR --steps 1000000000` in `cwd`, started as start_matmem does.
pid_t start_resume(const fs::path& cwd, const std::string& dir) {
  return start_matmem(cwd, "train --resume '" + dir + "' --steps 1000000000 --json");
}

// run_matmem's `matmem ARGS` after the shell commands `prefix` (limits, traps).
CommandResult run_matmem_after(const std::string& prefix, const std::string& args, const fs::path& dir) {
  const std::string line = "cd '" + dir.string() + "' && " + prefix + " OPENBLAS_NUM_THREADS=1 timeout 60 '" MATMEM_BINARY
                           "' " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = ::popen(line.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int raw = ::pclose(pipe);
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  return r;
}

std::int64_t checkpoint_step(const fs::path& dir) {
  return std::stoll(read_safetensors((dir / "checkpoint.safetensors").string()).metadata.at("step"));
}
}  // namespace

TEST_CASE("train: killed at random moments while checkpointing, a run always leaves a loadable checkpoint",
          "[tools][train][checkpoint]") {
  const fs::path dir = fresh_dir("crash");
  REQUIRE(run_matmem("train " + kSmall + " --steps 2 --out run --json", dir).status == 0);
  const fs::path run = dir / "run";
  std::mt19937 rng(20240615);
  // Once the child has written its first checkpoint it writes one every step (a write, an fsync, a rename
  // and an fsync of the directory: about a millisecond, most of its time): a kill a few milliseconds later
  // lands anywhere in a write or between two.
  std::uniform_int_distribution<int> delay_us(0, 4'000);
  constexpr int kKills = 120;
  std::int64_t last_step = checkpoint_step(run);
  int mid_write = 0, advanced = 0, loaded = 0;
  std::set<std::int64_t> steps;
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < kKills; ++k) {
    struct stat before {};
    REQUIRE(::stat((run / "checkpoint.safetensors").c_str(), &before) == 0);
    const pid_t pid = start_resume(dir, "run");
    REQUIRE(pid > 0);
    // Wait for the child's first checkpoint: a rename gives the file a new inode.
    for (int polls = 0; polls < 50'000; ++polls) {
      struct stat now {};
      if (::stat((run / "checkpoint.safetensors").c_str(), &now) == 0 && now.st_ino != before.st_ino) break;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFSIGNALED(status));  // killed, not stopped on its own
    if (fs::exists(run / "checkpoint.safetensors.tmp")) ++mid_write;
    INFO("kill " << k);
    // Complete and loadable: every entry and the metadata check out, and a trainer resumes from it.
    std::int64_t step = -1;
    REQUIRE_NOTHROW(step = checkpoint_step(run));
    REQUIRE_NOTHROW(Trainer::resume(run.string()));
    ++loaded;
    CHECK(step >= last_step);  // the old checkpoint or a newer one, never an older one
    advanced += step > last_step;
    last_step = step;
    steps.insert(step);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(kKills << " kills in " << seconds << " s: " << loaded << " checkpoints loaded, " << mid_write
              << " kills left a partly written temporary file, " << advanced << " advanced the run to step "
              << last_step);
  CHECK(loaded == kKills);
  CHECK(mid_write >= 5);  // the kills did land inside writes
  CHECK(advanced == kKills);  // each child wrote a checkpoint before it was killed
  // And the run, killed 120 times, finishes from its last checkpoint.
  const CommandResult done = run_matmem("train --resume run --json --steps " + std::to_string(last_step + 3), dir);
  CHECK(done.status == 0);
  CHECK(checkpoint_step(run) == last_step + 3);
  CHECK_FALSE(fs::exists(run / "checkpoint.safetensors.tmp"));
}

TEST_CASE("train: killed as it starts, a run leaves metrics.csv with its header or none, never an empty one",
          "[tools][train][checkpoint]") {
  // The first row comes after 1,000 steps (about a second of this small model), so a metrics.csv created empty
  // with its header still buffered would stay empty that long; the kill lands as soon as the file is there.
  const fs::path dir = fresh_dir("start_kill");
  for (int k = 0; k < 3; ++k) {
    const fs::path run = dir / ("run" + std::to_string(k));
    const pid_t pid =
        start_matmem(dir, "train " + kSmallMatNTM + " --set log_every=1000 --steps 100000 --out " + run.string());
    REQUIRE(pid > 0);
    bool seen = false;
    for (int polls = 0; polls < 300'000 && !seen; ++polls) {
      seen = fs::exists(run / "metrics.csv");
      if (!seen) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(seen);
    INFO("kill " << k);
    CHECK(read_file(run / "metrics.csv").starts_with("step,seconds,loss,bits_per_sequence,"));
  }
}

TEST_CASE("train: a checkpoint write past the file-size limit stops the run, names the file, keeps the old one",
          "[tools][train][checkpoint]") {
  const fs::path dir = fresh_dir("fsize");
  REQUIRE(run_matmem("train " + kSmall + " --steps 2 --out run --json", dir).status == 0);
  const fs::path ckpt = dir / "run/checkpoint.safetensors";
  const std::string before = read_file(ckpt);
  const auto blocks = before.size() / 1024 / 2;  // ulimit -f counts KiB: half the checkpoint fits
  REQUIRE(blocks >= 2);
  // SIGXFSZ ignored, as a job control shell or a service may leave it: write() then fails with EFBIG.
  const CommandResult r =
      run_matmem_after("trap '' XFSZ; ulimit -f " + std::to_string(blocks) + ";", "train --resume run --steps 4", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("checkpoint run/checkpoint.safetensors: writing run/checkpoint.safetensors.tmp "
                                "failed (File too large); the previous checkpoint is untouched"));
  CHECK(read_file(ckpt) == before);
  CHECK_FALSE(fs::exists(dir / "run/checkpoint.safetensors.tmp"));
  CHECK(run_matmem("train --resume run --steps 4 --json", dir).status == 0);
  CHECK(checkpoint_step(dir / "run") == 4);
}

TEST_CASE("train: a full disk or a temporary file that cannot be created stops the run and keeps the old checkpoint",
          "[tools][train][checkpoint]") {
  const fs::path dir = fresh_dir("full");
  REQUIRE(run_matmem("train " + kSmall + " --steps 2 --out run --json", dir).status == 0);
  const fs::path ckpt = dir / "run/checkpoint.safetensors", tmp = dir / "run/checkpoint.safetensors.tmp";
  const std::string before = read_file(ckpt);

  // A full disk: the temporary file is /dev/full, where every write fails with ENOSPC.
  fs::create_symlink("/dev/full", tmp);
  const CommandResult full = run_matmem("train --resume run --steps 4", dir);
  CHECK(full.refused());
  CHECK_THAT(full.output, Contains("checkpoint run/checkpoint.safetensors: writing run/checkpoint.safetensors.tmp "
                                   "failed (No space left on device); the previous checkpoint is untouched"));
  CHECK(read_file(ckpt) == before);

  // A temporary file that cannot be created (here a directory is in its way; a read-only directory is the same).
  fs::remove(tmp);
  fs::create_directory(tmp);
  const CommandResult blocked = run_matmem("train --resume run --steps 4", dir);
  CHECK(blocked.refused());
  CHECK_THAT(blocked.output, Contains("checkpoint run/checkpoint.safetensors: cannot create "
                                      "run/checkpoint.safetensors.tmp (Is a directory); the previous checkpoint is "
                                      "untouched"));
  CHECK(read_file(ckpt) == before);
  fs::remove(tmp);
  CHECK(run_matmem("train --resume run --steps 4 --json", dir).status == 0);
  CHECK(checkpoint_step(dir / "run") == 4);
}
