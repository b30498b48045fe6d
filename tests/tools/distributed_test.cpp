// `mpirun -np 2 matmem train --distributed` and `mpirun -np 2 matmem sweep`, on this machine's cores: the
// 2-rank run is the 2-thread run bit for bit, resumes bit for bit, and a killed rank ends the job with an error
// within seconds; a sweep over 2 ranks trains every run once, and one stopped by a signal and started again
// ends as one never stopped.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/tools/command.hpp"
#include "../models/data/small_data.hpp"

using namespace matmem;
using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// `mpirun -np 2 matmem ARGS` in `dir`, stopped after `seconds`.
CommandResult run_mpi(const std::string& args, const fs::path& dir, int seconds = 120) {
  return run_matmem(args, dir, seconds, kMpirun2);
}

// Every tensor of a checkpoint (parameters and optimiser state), its bytes, by name; and its step.
std::string tensors(const fs::path& run) {
  const TensorFile f = read_safetensors((run / "checkpoint.safetensors").string());
  std::string out = "step " + f.metadata.at("step") + "\n";
  for (const auto& [name, t] : f.tensors)
    out += name + " " + std::string(static_cast<const char*>(t.raw()), t.bytes()) + "\n";
  return out;
}

const std::string kRun = kSmallMatNTM + " --set batch=8 --set log_every=5 --set checkpoint_every=10 --json";

// `train ARGS` in one process with 2 threads (dir/threads) and over 2 ranks (dir/ranks), checked equal bit for
// bit (metrics but for their seconds, every tensor of the checkpoint); the ranks' output.
CommandResult ranks_equal_threads(const std::string& args, const fs::path& dir) {
  const CommandResult threads = run_matmem("train " + args + " --threads 2 --out threads", dir);
  INFO(threads.output);
  REQUIRE(threads.status == 0);
  const CommandResult two = run_mpi("train --distributed " + args + " --out ranks", dir);
  INFO(two.output);
  REQUIRE(two.status == 0);
  CHECK(metrics_without_seconds(dir / "ranks") == metrics_without_seconds(dir / "threads"));
  CHECK(tensors(dir / "ranks") == tensors(dir / "threads"));
  return two;
}

}  // namespace

TEST_CASE("distributed: 2 ranks train bit for bit as 1 process with 2 threads, and resume bit for bit",
          "[tools][distributed]") {
  const fs::path dir = fresh_dir("distributed_equal");
  const CommandResult two = ranks_equal_threads(kRun + " --steps 40", dir);
  // Only rank 0 writes: one JSON line, one run.
  CHECK(count_of(two.output, "\"steps\":40") == 1);
  // 20 steps, then resumed to 40 with the same 2 ranks: the uninterrupted run's bytes.
  REQUIRE(run_mpi("train --distributed " + kRun + " --steps 20 --out resumed", dir).status == 0);
  const CommandResult rest = run_mpi("train --distributed --resume resumed --steps 40 --json", dir);
  INFO(rest.output);
  REQUIRE(rest.status == 0);
  CHECK(metrics_without_seconds(dir / "resumed") == metrics_without_seconds(dir / "ranks"));
  CHECK(read_file(dir / "resumed/checkpoint.safetensors") == read_file(dir / "ranks/checkpoint.safetensors"));
  // One process alone rounds differently: the test can tell the runs apart.
  REQUIRE(run_matmem("train " + kRun + " --steps 40 --out alone", dir).status == 0);
  CHECK(tensors(dir / "alone") != tensors(dir / "ranks"));
}

TEST_CASE("distributed: the MatDNC trains over 2 ranks bit for bit as 1 process with 2 threads",
          "[tools][distributed][dnc]") {
  const fs::path dir = fresh_dir("distributed_dnc");
  const std::string run = "--model matdnc --set 'model.layers=\"4x3\"' --set task.rows=2 --set task.cols=3 "
                          "--set task.max_length=4 --set dnc.slots=4 --set dnc.slot_rows=2 --set dnc.slot_cols=2 "
                          "--set batch=8 --set log_every=5 --set checkpoint_every=10 --json --steps 20";
  ranks_equal_threads(run, dir);
}

TEST_CASE("distributed: with batch norm, 2 ranks train bit for bit as 1 process with 2 threads",
          "[tools][distributed][batch_norm]") {
  // Each element's batch statistics are summed over the ranks as over the threads (ops/batch_norm.hpp): the
  // same additions in the same order, so the same parameters, running statistics and evaluations.
  const fs::path dir = fresh_dir("distributed_batch_norm");
  write_fashion_dir((dir / "data").string(), 48, 20);
  const std::string run = "--model ffn --task fashion_mnist --set task.data_dir=" + (dir / "data").string() +
                          " --set task.train=40 --set task.validation=10 --set task.test=15 --set model.layers=3x4"
                          " --set ffn.depth=3 --set ffn.norm=batch --set batch=8 --set optimizer=adam --set lr=0.01"
                          " --set eval.interval=5 --set eval.batch=5 --set log_every=5 --set checkpoint_every=10"
                          " --json --steps 20";
  ranks_equal_threads(run, dir);
  const std::string saved = tensors(dir / "ranks");
  CHECK(saved.find("norm/running_mean") != std::string::npos);  // the running statistics were compared too
  // One process of one thread takes the same statistics but adds in another order: the test tells them apart.
  REQUIRE(run_matmem("train " + run + " --out alone", dir).status == 0);
  CHECK(tensors(dir / "alone") != saved);
}

TEST_CASE("distributed: without an MPI launcher, --distributed is refused saying how to start it",
          "[tools][distributed][errors]") {
  const fs::path dir = fresh_dir("distributed_no_mpirun");
  const CommandResult r = run_matmem("train --distributed " + kRun + " --steps 2 --out x", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("--distributed") && Contains("mpirun -np K"));
  CHECK_FALSE(fs::exists(dir / "x/checkpoint.safetensors"));
}

TEST_CASE("distributed: a float64 run over ranks is refused saying why, and writes nothing",
          "[tools][distributed][errors]") {
  const fs::path dir = fresh_dir("distributed_float64");
  const CommandResult r = run_mpi("train --distributed " + kRun + " --steps 2 --set dtype=float64 --out x", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("float32 gradients") && Contains("float64 run (dtype) trains in one process"));
  CHECK_FALSE(fs::exists(dir / "x/checkpoint.safetensors"));
}

TEST_CASE("distributed: a killed rank ends the whole job with an error naming it, within seconds",
          "[tools][distributed][errors]") {
  const fs::path dir = fresh_dir("distributed_killed");
  const pid_t job = start_matmem("train --distributed " + kRun + " --steps 1000000 --out run", dir, "job.log", kMpirun2);
  REQUIRE(job > 0);
  // Rank 1: the process whose environment says so, once the run is under way.
  pid_t rank1 = -1;
  const auto t0 = std::chrono::steady_clock::now();
  while (rank1 < 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(dir / "run/checkpoint.safetensors")) continue;
    std::error_code ec;
    for (const auto& p : fs::directory_iterator("/proc", ec)) {
      if (fs::read_symlink(p.path() / "cwd", ec) != dir) continue;
      if (read_file(p.path() / "environ").find("OMPI_COMM_WORLD_RANK=1") != std::string::npos &&
          read_file(p.path() / "cmdline").find("--distributed") != std::string::npos)
        rank1 = pid_t(std::stol(p.path().filename().string()));
    }
  }
  REQUIRE(rank1 > 0);
  ::kill(rank1, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  int status = 0;
  pid_t ended = 0;
  while ((ended = ::waitpid(job, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - killed < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  if (ended == 0) {
    ::kill(job, SIGKILL);
    ::waitpid(job, &status, 0);
  }
  const std::string log = read_file(dir / "job.log");
  INFO(log);
  REQUIRE(ended == job);
  CHECK(seconds < 10);
  CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK_THAT(log, Contains("rank 1") && Contains("signal 9"));
}

TEST_CASE("distributed: a sweep over 2 ranks trains every run once, and one stopped and restarted ends the same",
          "[tools][distributed][sweep]") {
  const fs::path dir = fresh_dir("distributed_sweep");
  const std::string body =
      R"(, "steps": 60000, "seeds": [1, 2], "set": {"task": "copy", "model": "matntm", "model.layers": "4x3",
      "task.rows": 2, "task.cols": 3, "task.max_length": 3, "batch": 2, "ntm.slots": 4, "ntm.slot_rows": 2,
      "ntm.slot_cols": 2, "checkpoint_every": 500, "log_every": 100}, "grid": {"lr": [0.001, 0.003]}})";
  std::ofstream(dir / "whole.json") << R"({"out": "whole")" + body;
  std::ofstream(dir / "stopped.json") << R"({"out": "stopped")" + body;
  const CommandResult whole = run_mpi("sweep whole.json", dir, 300);
  INFO(whole.output);
  REQUIRE(whole.status == 0);
  CHECK_THAT(whole.output, Contains("4 runs, 0 complete, 4 to train (2 ranks"));
  CHECK(count_of(whole.output, "rank 0: started") >= 1);
  CHECK(count_of(whole.output, "rank 1: started") >= 1);
  CHECK(count_of(read_file(dir / "whole/results.csv"), "\"complete\"") == 4);
  for (const char* lr : {"lr=0.001", "lr=0.003"})
    for (const char* seed : {"seed1", "seed2"})
      CHECK(count_of(read_file(dir / "whole" / lr / seed / "train.log"), "$ matmem train") == 1);
  // SIGTERM, as a scheduler stops a job, once a run has its first checkpoint; then the same command again. mpirun
  // takes up to a second or so to pass the signal on: the runs are long enough (3 s here) to be cut short.
  const pid_t job = start_matmem("sweep stopped.json", dir, "stopped.log", kMpirun2);
  REQUIRE(job > 0);
  wait_for_file(dir / "stopped/lr=0.001/seed1/checkpoint.safetensors", 60);
  ::kill(job, SIGTERM);
  ::waitpid(job, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const CommandResult status = run_matmem("sweep stopped.json --status", dir, 60);
  INFO(status.output);
  CHECK_THAT(status.output, Contains("interrupted at step"));
  const CommandResult rest = run_mpi("sweep stopped.json", dir, 300);
  INFO(rest.output);
  REQUIRE(rest.status == 0);
  CHECK_THAT(rest.output, Contains("(resuming at step"));
  for (const char* lr : {"lr=0.001", "lr=0.003"})
    for (const char* seed : {"seed1", "seed2"}) {
      INFO(lr << "/" << seed);
      CHECK(metrics_without_seconds(dir / "stopped" / lr / seed) == metrics_without_seconds(dir / "whole" / lr / seed));
      CHECK(read_file(dir / "stopped" / lr / seed / "checkpoint.safetensors") ==
            read_file(dir / "whole" / lr / seed / "checkpoint.safetensors"));
    }
}
