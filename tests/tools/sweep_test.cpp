// `matmem sweep`: a plan's runs are what the plan says, each trained exactly once; a sweep killed midway and
// started again ends with the results of one never interrupted; failures and bad plans are named.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/file.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/files.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/tools/command.hpp"
#include "matmem/tools/sweep.hpp"

using namespace matmem;
using namespace matmem::testing;
using namespace matmem::tools::sweep;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// The small MatNTM of the command tests, as a plan's "set".
const std::string kSmallSet =
    R"("task": "copy", "model": "matntm", "model.layers": "4x3", "task.rows": 2, "task.cols": 3, "task.max_length": 3,
       "batch": 2, "ntm.slots": 4, "ntm.slot_rows": 2, "ntm.slot_cols": 2)";

fs::path write_plan(const fs::path& dir, const std::string& name, const std::string& json) {
  const fs::path p = dir / name;
  std::ofstream(p) << json;
  return p;
}

// metrics.csv without its seconds column, and the checkpoint's bytes: what a run learned.
std::string learned(const fs::path& run) {
  return metrics_without_seconds(run) + read_file(run / "checkpoint.safetensors");
}
}  // namespace

TEST_CASE("sweep: a plan is every named run times every grid combination times every seed", "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_plan");
  const fs::path p = write_plan(dir, "p.json", R"({"out": "o", "steps": 7, "seeds": [3, 1], "set": {"task": "copy"},
      "grid": {"lr": [0.001, 0.01], "ntm.controller": ["rnn", "lstm"]},
      "runs": [{"name": "ntm", "set": {"model": "matntm"}}, {"name": "rnn", "set": {"model": "matrnn", "lr": 0.5}}]})");
  const Plan plan = read_plan(p);
  REQUIRE(plan.runs.size() == 2 * 4 * 2);
  CHECK(plan.out == "o");
  CHECK(plan.runs[0].name == "ntm/lr=0.001,ntm.controller=rnn");
  CHECK(plan.runs[0].seed == 3);
  CHECK(plan.runs[1].seed == 1);
  CHECK(plan.runs[2].name == "ntm/lr=0.001,ntm.controller=lstm");
  CHECK(plan.runs[4].name == "ntm/lr=0.01,ntm.controller=rnn");
  CHECK(plan.runs[8].name == "rnn/lr=0.001,ntm.controller=rnn");
  CHECK(plan.runs[9].dir == fs::path("o/rnn/lr=0.001,ntm.controller=rnn/seed1"));
  for (const PlannedRun& r : plan.runs) CHECK(r.steps == 7);
  // the common keys, then the run's own, then the grid's: the grid's lr wins over the run's
  const auto& sets = plan.runs[8].sets;
  REQUIRE(sets.size() == 5);
  CHECK(sets[0] == std::pair<std::string, std::string>("task", "\"copy\""));
  CHECK(sets[1] == std::pair<std::string, std::string>("model", "\"matrnn\""));
  CHECK(sets[3] == std::pair<std::string, std::string>("lr", "0.001"));
  const std::vector<std::string> args = train_arguments(plan.runs[8], {State::fresh, 0});
  CHECK(args == std::vector<std::string>{"train", "--set", "task=\"copy\"", "--set", "model=\"matrnn\"", "--set",
                                         "lr=0.5", "--set", "lr=0.001", "--set", "ntm.controller=\"rnn\"", "--seed",
                                         "3", "--steps", "7", "--out", "o/rnn/lr=0.001,ntm.controller=rnn/seed3"});
  CHECK(train_arguments(plan.runs[8], {State::interrupted, 4}) ==
        std::vector<std::string>{"train", "--resume", "o/rnn/lr=0.001,ntm.controller=rnn/seed3", "--steps", "7"});
  CHECK(train_arguments(plan.runs[8], {State::begun, 0}).back() == "--overwrite");
  // Without runs or grid: one run, seed 1, the steps of the preset; out named after the plan.
  const Plan one = read_plan(write_plan(dir, "single.json", R"({"set": {"model": "matrnn"}})"));
  REQUIRE(one.runs.size() == 1);
  CHECK(one.runs[0].name == "run");
  CHECK(one.runs[0].seed == 1);
  CHECK(one.runs[0].steps == 3000);
  CHECK(one.out == fs::path("runs/sweep-single"));
  // A config file, the plan's or a run's own: read in the plan's check, passed on as --config.
  write_plan(dir, "c.json", R"({"model": "matrnn", "steps": 11})");
  const std::string cfg = (dir / "c.json").string();
  const Plan files = read_plan(write_plan(dir, "files.json", R"({"config": ")" + cfg + R"(", "runs": [{"name": "a"},
      {"name": "b", "config": ")" + cfg + R"(", "set": {"steps": 12}}]})"));
  CHECK(files.runs[0].steps == 11);
  CHECK(files.runs[1].steps == 12);
  CHECK(train_arguments(files.runs[0], {State::fresh, 0})[2] == cfg);
  CHECK_THROWS_WITH(read_plan(write_plan(dir, "nofile.json", R"({"runs": [{"name": "b", "config": "nowhere.json"}]})")),
                    Contains("nowhere.json") && Contains("cannot be read"));
}

TEST_CASE("sweep: {seed} in a string value is each run's seed, in its config and its train arguments", "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_seed_value");
  const Plan plan = read_plan(write_plan(dir, "p.json", R"({"out": "o", "seeds": [4, 12], "set": {"model": "matrnn",
      "init": "runs/a/seed{seed}/x{seed}"}, "runs": [{"name": "b", "set": {"log_every": 7}}]})"));
  REQUIRE(plan.runs.size() == 2);
  for (const PlannedRun& r : plan.runs) {
    const std::string want = fmt::format("runs/a/seed{0}/x{0}", r.seed);
    INFO("seed " << r.seed);
    CHECK(r.sets[1] == std::pair<std::string, std::string>("init", "\"" + want + "\""));
    CHECK(nlohmann::json::parse(r.resolved).at("init") == want);
    const std::vector<std::string> args = train_arguments(r, {State::fresh, 0});
    CHECK(std::find(args.begin(), args.end(), "init=\"" + want + "\"") != args.end());
  }
}

TEST_CASE("sweep: a bad plan is refused naming the file, the run and what is wrong", "[tools][sweep][errors]") {
  const fs::path dir = fresh_dir("sweep_bad_plan");
  auto refusal = [&](const std::string& json) {
    const fs::path p = write_plan(dir, "bad.json", json);
    try {
      read_plan(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refusal(R"({"sed": [1]})"), Contains("bad.json") && Contains("unknown key 'sed'") && Contains("seeds"));
  CHECK_THAT(refusal(R"({"seeds": [1, -2]})"), Contains("seed -2 is not a whole number"));
  CHECK_THAT(refusal(R"({"seeds": [1, 1]})"), Contains("seed 1 is listed twice"));
  CHECK_THAT(refusal(R"({"seeds": []})"), Contains("non-empty list of seeds"));
  CHECK_THAT(refusal(R"({"steps": 0})"), Contains("\"steps\" must be a whole number ≥ 1"));
  CHECK_THAT(refusal(R"({"grid": {"lr": 0.1}})"), Contains("grid \"lr\" must be a non-empty list"));
  CHECK_THAT(refusal(R"({"runs": [{"set": {}}]})"), Contains("run 1: needs a \"name\""));
  CHECK_THAT(refusal(R"({"runs": [{"name": "../x"}]})"), Contains("run 1: run name '../x' cannot name a directory"));
  CHECK_THAT(refusal(R"({"runs": [{"name": "a"}, {"name": "a"}]})"), Contains("two runs are named a"));
  CHECK_THAT(refusal(R"({"runs": [{"name": "a", "set": {"lr": "fast"}}]})"),
             Contains("bad.json (a, seed 1)") && Contains("lr must be a number"));
  CHECK_THAT(refusal(R"({"set": {"ntm.slot": 3}})"), Contains("unknown config key ntm.slot"));
  CHECK_THAT(refusal(R"([1, 2])"), Contains("must be a JSON object"));
  CHECK_THAT(refusal(R"({"out": )"), Contains("bad.json: not JSON"));
  CHECK_THAT(refusal(R"({})").substr(0, 8), Contains("accepted"));
  CHECK_THROWS_WITH(read_plan(dir / "missing.json"), Contains("missing.json: cannot read it"));
}

TEST_CASE("sweep: the results table from a run's metrics, across a resume", "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_results");
  PlannedRun run{"r", 2, 3000, "", {}, dir / "r/seed2"};
  fs::create_directories(run.dir);
  CHECK(run_result(run).status == "not started");
  std::ofstream(run.dir / "config.json") << R"({"model": "matrnn"})";
  {
    // Two processes: steps 500..2000 from the first (seconds from 0), 2500.. from the second. The rows past the
    // checkpoint (step 2500) were written by a process killed before its next checkpoint.
    std::ofstream m(run.dir / "metrics.csv");
    m << "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped\n"
         "500,1.0,0.5,9.0,1,1,0\n1000,2.0,0.4,2.0,1,1,0\n1500,3.0,0.3,0.5,1,1,0\n2000,4.0,0.2,0.5,1,1,0\n"
         "2500,1.5,0.1,0.25,1,1,0\n3000,3.0,0.0,0.0,1,1,0\n";
  }
  CHECK(run_state(run).state == State::begun);
  TensorFile f;
  f.metadata["step"] = "2500";
  write_safetensors((run.dir / "checkpoint.safetensors").string(), f);
  RunState s = run_state(run);
  CHECK((s.state == State::interrupted && s.steps_done == 2500));
  RunResult r = run_result(run);
  CHECK(r.status == "interrupted at step 2500");
  CHECK(r.steps_done == 2500);
  CHECK(r.first_below_1bit == 2000);       // steps 1001..2000: (0.5 + 0.5) / 2; at 1500: (2 + 0.5) / 2
  CHECK(r.bits == Approx((0.5 + 0.25) / 2));  // the rows of steps 1501..2500
  CHECK(r.loss == Approx((0.2 + 0.1) / 2));
  CHECK(r.seconds == Approx(4.0 + 1.5));   // the first process's 4 s, the second's 1.5 s to the checkpoint
  f.metadata["step"] = "3000";
  write_safetensors((run.dir / "checkpoint.safetensors").string(), f);
  r = run_result(run);
  CHECK(r.status == "complete");
  CHECK(r.bits == Approx((0.25 + 0.0) / 2));
  CHECK(r.seconds == Approx(4.0 + 3.0));
  const std::string md = markdown_table({r}), csv = csv_table({r});
  // means at 1000 / 1500 / 2000 / 2500 / 3000: 5.5, 1.25, 0.5, 0.375, 0.125: none above 5 after 2000
  CHECK((r.collapses == 0 && r.best == Approx(0.125) && r.best_step == 3000));
  CHECK_THAT(md, Contains("| r | 2 | 3000/3000 | 0.0500 | 0.1250 bits/seq | 2000 | 0 | 0.1250 (3000) | 7.0 | complete |"));
  CHECK_THAT(csv, Contains("\"r\",2,3000,3000,0.050000,0.125000,\"bits/seq\",2000,0,0.125000,3000,7.000,\"complete\""));
  // A task whose cost is an error rate: named so, and no "first step below 1 bit" (it is below 1 from the start).
  std::ofstream(run.dir / "config.json") << R"({"model": "irnn", "task": "retrieval"})";
  r = run_result(run);
  CHECK(r.cost_name == "errors/seq");
  CHECK(r.first_below_1bit == -1);
  CHECK_THAT(markdown_table({r}), Contains("| 0.1250 errors/seq | – | – | 0.1250 (3000) |"));
  // At one sequence an update the means are over 16,000 steps (16,000 sequences): rows every 4,000 steps, of
  // 2 bits to step 16,000 and 0 after; the 1,000-step mean is 0 from step 20,000, the 16,000-step one below 1
  // only at 28,000 ((0 + 0 + 0 + 2) / 4 = 0.5), and at the end (32,000) 0.
  PlannedRun one{"one", 1, 32000, "", {}, dir / "one/seed1"};
  fs::create_directories(one.dir);
  std::ofstream(one.dir / "config.json") << R"({"model": "matntm", "batch": 1})";
  {
    std::ofstream m(one.dir / "metrics.csv");
    m << "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped\n";
    for (int k = 1; k <= 8; ++k) m << 4000 * k << "," << k << ",0.5," << (k <= 4 ? 2.0 : 0.0) << ",1,1,0\n";
  }
  TensorFile g;
  g.metadata["step"] = "32000";
  write_safetensors((one.dir / "checkpoint.safetensors").string(), g);
  const RunResult o = run_result(one);
  CHECK(o.window_steps == 16000);
  CHECK(o.first_below_1bit == 28000);
  CHECK(o.bits == Approx(0.0));
  std::ofstream(one.dir / "config.json") << R"({"model": "matntm", "batch": 16})";  // the same rows at 16: 1,000 steps
  CHECK(run_result(one).first_below_1bit == 20000);
  CHECK_THAT(markdown_table({o}), Contains("means over the last 16,000 sequences"));
  CHECK((o.collapses == 0 && o.best == Approx(0.0) && o.best_step == 32000));
  // Collapses: at batch 16 (1,000-step means of two rows) 4.5 at 1000, 0 at 1500 (the first below 1 bit), then
  // 6, 12, 6 (one stretch above 5 bits), 0, then 10, 20, 10 to the end (a second); the best the first 0.
  PlannedRun col{"c", 1, 5000, "", {}, dir / "c/seed1"};
  fs::create_directories(col.dir);
  std::ofstream(col.dir / "config.json") << R"({"model": "matntm", "batch": 16})";
  {
    std::ofstream m(col.dir / "metrics.csv");
    m << "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped\n";
    const double bits[] = {9, 0, 0, 12, 12, 0, 0, 20, 20, 0};
    for (int k = 1; k <= 10; ++k) m << 500 * k << "," << k << ",0.5," << bits[k - 1] << ",1,1,0\n";
  }
  g.metadata["step"] = "5000";
  write_safetensors((col.dir / "checkpoint.safetensors").string(), g);
  const RunResult c = run_result(col);
  CHECK(c.first_below_1bit == 1500);
  CHECK(c.collapses == 2);
  CHECK((c.best == Approx(0.0) && c.best_step == 1500));
  CHECK(c.bits == Approx(10.0));
  CHECK_THAT(markdown_table({c}), Contains("| 10.00 bits/seq | 1500 | 2 | 0.0000 (1500) |"));
  f.metadata["step"] = "12x";
  write_safetensors((run.dir / "checkpoint.safetensors").string(), f);
  CHECK_THROWS_WITH(run_state(run), Contains("checkpoint.safetensors: step \"12x\" is not a whole number"));
  // A checkpoint that cannot be read is reported, never replaced.
  std::ofstream(run.dir / "checkpoint.safetensors") << "torn";
  CHECK_THROWS_WITH(run_state(run), Contains("checkpoint.safetensors"));
  CHECK_THAT(run_result(run).status, Contains("failed") && Contains("checkpoint.safetensors"));
}

TEST_CASE("sweep: a run stopped early by its patience is finished, not interrupted", "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_stopped");
  PlannedRun run{"r", 1, 3000, "", {}, dir / "r/seed1"};
  fs::create_directories(run.dir);
  TensorFile f;
  f.metadata["step"] = "1200";
  f.metadata["early_stopping"] = "0.25 600 3 0";  // best at step 600, 3 evaluations since, not stopped
  write_safetensors((run.dir / "checkpoint.safetensors").string(), f);
  CHECK(run_state(run).state == State::interrupted);
  f.metadata["early_stopping"] = "0.25 600 3 1";
  write_safetensors((run.dir / "checkpoint.safetensors").string(), f);
  const RunState s = run_state(run);
  CHECK((s.state == State::stopped && s.steps_done == 1200));
  CHECK(finished(s.state));
  CHECK(run_result(run).status == "stopped early at step 1200");
}

TEST_CASE("sweep: with 2 jobs every run is trained exactly once, and a second sweep trains nothing",
          "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_once");
  write_plan(dir, "p.json", R"({"out": "o", "steps": 30, "seeds": [1, 2], "set": {)" + kSmallSet +
                                R"(, "checkpoint_every": 10, "log_every": 10}, "grid": {"lr": [0.001, 0.01]}})");
  const CommandResult r = run_matmem("sweep p.json --jobs 2", dir, 120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("4 runs, 0 complete, 4 to train (2 at a time)"));
  for (const char* name : {"lr=0.001", "lr=0.01"})
    for (const char* seed : {"seed1", "seed2"}) {
      const fs::path run = dir / "o" / name / seed;
      INFO(run.string());
      CHECK(count_of(read_file(run / "train.log"), "$ matmem train") == 1);
      CHECK(count_of(read_file(run / "metrics.csv"), "\n30,") == 1);
    }
  const std::string csv = read_file(dir / "o/results.csv");
  CHECK(count_of(csv, ",30,30,") == 4);
  CHECK(count_of(csv, "\"complete\"") == 4);
  CHECK_THAT(read_file(dir / "o/results.md"), Contains("| lr=0.01 | 2 | 30/30 |"));
  const CommandResult again = run_matmem("sweep p.json --jobs 2", dir, 60);
  CHECK(again.status == 0);
  CHECK_THAT(again.output, Contains("4 runs, 4 complete, 0 to train"));
  CHECK(count_of(read_file(dir / "o/lr=0.01/seed2/train.log"), "$ matmem train") == 1);
}

// DIR/p.json: runs "a" and "b" of 20 steps into DIR/o, for the given seeds (a JSON list).
static void write_ab_plan(const fs::path& dir, const std::string& seeds) {
  write_plan(dir, "p.json",
             R"({"out": "o", "steps": 20, "seeds": )" + seeds + R"(, "set": {)" + kSmallSet +
                 R"(, "checkpoint_every": 10, "log_every": 10}, "runs": [{"name": "a"}, {"name": "b"}]})");
}

TEST_CASE("sweep: --seeds trains only those of the plan's seeds, and the table still shows the whole plan",
          "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_seeds");
  write_ab_plan(dir, "[1, 2, 3]");
  const CommandResult r = run_matmem("sweep p.json --seeds 3,1", dir, 120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("4 runs of seeds 3, 1, 0 complete, 4 to train (1 at a time)"));
  for (const char* name : {"a", "b"}) {
    CHECK(fs::exists(dir / "o" / name / "seed1/checkpoint.safetensors"));
    CHECK(fs::exists(dir / "o" / name / "seed3/checkpoint.safetensors"));
    CHECK_FALSE(fs::exists(dir / "o" / name / "seed2"));
  }
  const std::string table = read_file(dir / "o/results.md");
  CHECK_THAT(table, Contains("| a | 1 | 20/20 |") && Contains("| b | 3 | 20/20 |") && Contains("| a | 2 | 0/20 |"));
  // The rest of the plan afterwards: only seed 2 is left.
  const CommandResult rest = run_matmem("sweep p.json", dir, 120);
  INFO(rest.output);
  REQUIRE(rest.status == 0);
  CHECK_THAT(rest.output, Contains("6 runs, 4 complete, 2 to train"));
  // A seed the plan does not have is refused before anything trains, naming the plan's seeds.
  const CommandResult bad = run_matmem("sweep p.json --seeds 2,9", dir, 60);
  CHECK(bad.refused());
  CHECK_THAT(bad.output, Contains("p.json has no seed 9 (its seeds: 1, 2, 3)"));
}

TEST_CASE("sweep: --runs trains only those of the plan's runs, with --seeds only those seeds of them", "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_runs");
  write_ab_plan(dir, "[1, 2]");
  const CommandResult r = run_matmem("sweep p.json --runs b --seeds 2", dir, 120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("1 runs of b of seeds 2, 0 complete, 1 to train (1 at a time)"));
  CHECK(fs::exists(dir / "o/b/seed2/checkpoint.safetensors"));
  CHECK_FALSE(fs::exists(dir / "o/b/seed1"));
  CHECK_FALSE(fs::exists(dir / "o/a"));
  CHECK_THAT(read_file(dir / "o/results.md"), Contains("| b | 2 | 20/20 |") && Contains("| a | 1 | 0/20 |"));
  const CommandResult both = run_matmem("sweep p.json --runs a,b --seeds 1", dir, 120);
  INFO(both.output);
  REQUIRE(both.status == 0);
  CHECK_THAT(both.output, Contains("2 runs of a, b of seeds 1, 0 complete, 2 to train"));
  // A name the plan does not have is refused before anything trains, naming the plan's runs.
  const CommandResult bad = run_matmem("sweep p.json --runs a,c", dir, 60);
  CHECK(bad.refused());
  CHECK_THAT(bad.output, Contains("p.json has no run c (its runs: a, b)"));
  CHECK_FALSE(fs::exists(dir / "o/a/seed2"));
}

TEST_CASE("sweep: a run trained with settings the plan no longer gives is refused and kept, a longer budget resumes it",
          "[tools][sweep][errors]") {
  const fs::path dir = fresh_dir("sweep_changed");
  const auto plan = [&](const std::string& steps, const std::string& extra) {
    write_plan(dir, "p.json", R"({"out": "o", "steps": )" + steps + R"(, "set": {)" + kSmallSet + extra +
                                  R"(, "checkpoint_every": 10, "log_every": 10}, "runs": [{"name": "a"}]})");
  };
  plan("20", "");
  REQUIRE(run_matmem("sweep p.json", dir, 120).status == 0);
  const std::string before = learned(dir / "o/a/seed1");
  // The controller's layers and the rate changed under a complete run: refused, naming both keys and values.
  plan("20", R"(, "model.layers": "3x3", "lr": 0.002)");
  const CommandResult changed = run_matmem("sweep p.json", dir, 60);
  INFO(changed.output);
  CHECK(changed.refused());
  CHECK_THAT(changed.output, Contains("1 of its runs were trained with settings the plan no longer gives them") &&
                                 Contains("a seed 1 (o/a/seed1/config.json)") &&
                                 Contains("model.layers = \"4x3\" (the plan: \"3x3\")") &&
                                 Contains("lr = 0.0001 (the plan: 0.002)") && Contains("move their directories away"));
  CHECK(learned(dir / "o/a/seed1") == before);
  // --status still prints the table, with the same runs as a note.
  const CommandResult status = run_matmem("sweep p.json --status", dir, 60);
  INFO(status.output);
  CHECK(status.status == 0);
  CHECK_THAT(status.output, Contains("note: 1 of the runs") && Contains("| a | 1 | 20/20 |"));
  // The same settings with a larger budget: the run goes on from its checkpoint.
  plan("30", "");
  const CommandResult longer = run_matmem("sweep p.json", dir, 120);
  INFO(longer.output);
  CHECK(longer.status == 0);
  CHECK_THAT(longer.output, Contains("(resuming at step 20)"));
  CHECK_THAT(read_file(dir / "o/results.md"), Contains("| a | 1 | 30/30 |"));
  // Under a cosine schedule the budget is the schedule's length: a larger one is a new training, refused.
  plan("30", R"(, "lr.schedule": "cosine")");
  fs::remove_all(dir / "o");
  REQUIRE(run_matmem("sweep p.json", dir, 120).status == 0);
  plan("40", R"(, "lr.schedule": "cosine")");
  const CommandResult cosine = run_matmem("sweep p.json", dir, 60);
  INFO(cosine.output);
  CHECK(cosine.refused());
  CHECK_THAT(cosine.output, Contains("steps = 30 (the plan: 40)"));
}

TEST_CASE("sweep: killed midway and started again, it ends with the results of a sweep never interrupted",
          "[tools][sweep]") {
  const fs::path dir = fresh_dir("sweep_killed");
  const std::string body = R"(, "steps": 3000, "seeds": [1, 2], "set": {)" + kSmallSet +
                           R"(, "checkpoint_every": 100, "log_every": 50}, "grid": {"lr": [0.001, 0.003]}})";
  write_plan(dir, "whole.json", R"({"out": "whole")" + body);
  write_plan(dir, "killed.json", R"({"out": "killed")" + body);
  REQUIRE(run_matmem("sweep whole.json --jobs 2", dir, 300).status == 0);
  // Kill the second sweep (and so its runs) once its first run has a checkpoint.
  const pid_t pid = start_matmem("sweep killed.json --jobs 2", dir, "killed.log");
  REQUIRE(pid > 0);
  wait_for_file(dir / "killed/lr=0.001/seed1/checkpoint.safetensors", 60);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its runs end on SIGTERM from the kernel
  const CommandResult status = run_matmem("sweep killed.json --status", dir, 60);
  INFO(status.output);
  REQUIRE(status.status == 0);
  CHECK_THAT(status.output, Contains("interrupted at step"));  // the kill did cut a run short
  const CommandResult rest = run_matmem("sweep killed.json --jobs 2", dir, 300);
  INFO(rest.output);
  REQUIRE(rest.status == 0);
  CHECK_THAT(rest.output, Contains("(resuming at step"));
  for (const char* name : {"lr=0.001", "lr=0.003"})
    for (const char* seed : {"seed1", "seed2"}) {
      INFO(name << "/" << seed);
      CHECK(learned(dir / "killed" / name / seed) == learned(dir / "whole" / name / seed));
    }
}

TEST_CASE("sweep: a run that fails is named, the others still train, and a second sweep of the same runs is refused",
          "[tools][sweep][errors]") {
  const fs::path dir = fresh_dir("sweep_failed");
  // ntm.shift 2 needs 2S+1 = 5 slots: a config the plan accepts and the model refuses when the run starts.
  write_plan(dir, "p.json", R"({"out": "o", "steps": 5, "set": {)" + kSmallSet +
                                R"(}, "runs": [{"name": "bad", "set": {"ntm.shift": 2}}, {"name": "good"}]})");
  const CommandResult r = run_matmem("sweep p.json", dir, 120);
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Contains("bad seed 1: FAILED (exit status 1)") && Contains("o/bad/seed1/train.log"));
  CHECK_THAT(r.output, Contains("1 of its runs failed"));
  CHECK_THAT(read_file(dir / "o/results.md"), Contains("| bad | 1 | 0/5 |") && Contains("failed: ") &&
                                                  Contains("config (ntm.*)") && Contains("shift 2") && Contains("| good | 1 | 5/5 |"));
  // Another sweep holds the lock: refused, naming the directory.
  const int fd = ::open((dir / "o/.sweep.lock").c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  const CommandResult locked = run_matmem("sweep p.json", dir, 60);
  ::close(fd);
  CHECK(locked.refused());
  CHECK_THAT(locked.output, Contains("another sweep is training the runs in o") && Contains("--jobs N"));
}

TEST_CASE("sweep: every shipped plan reads, from the repository's root as its paths assume", "[tools][sweep]") {
  const fs::path source = MATMEM_SOURCE_DIR;
  const fs::path here = fs::current_path();
  fs::current_path(source);
  int plans = 0;
  try {
    for (const auto& f : fs::directory_iterator(source / "models/plans")) {
      if (f.path().extension() != ".json") continue;
      INFO(f.path());
      ++plans;
      const Plan plan = read_plan(f.path());
      CHECK_FALSE(plan.runs.empty());
      CHECK(plan.out.string().rfind("runs/", 0) == 0);
    }
  } catch (...) {
    fs::current_path(here);
    throw;
  }
  fs::current_path(here);
  CHECK(plans >= 3);
}

// Checkpoints, a run's config.json and a sweep's results go through write_file_durably (a temporary file renamed
// over the target): a process killed midway had left an empty config.json that `sweep --status` could not read.
TEST_CASE("write_file_durably replaces a file whole and, when it cannot write, leaves the old one as it was",
          "[tools][sweep][files]") {
  const fs::path dir = fresh_dir("atomic_write");
  std::ofstream(dir / "a.txt") << "old";
  write_file_durably((dir / "a.txt").string(), "new text\n");
  CHECK(read_file(dir / "a.txt") == "new text\n");
  CHECK_FALSE(fs::exists(dir / "a.txt.tmp"));
  // The temporary cannot be made (a directory stands in its place): refused naming it, the file untouched.
  std::ofstream(dir / "b.txt") << "kept";
  fs::create_directory(dir / "b.txt.tmp");
  CHECK_THROWS_WITH(write_file_durably((dir / "b.txt").string(), "lost"), Contains("b.txt.tmp"));
  CHECK(read_file(dir / "b.txt") == "kept");
  CHECK_THROWS_WITH(write_file_durably((dir / "missing" / "c.txt").string(), "x"), Contains("missing/c.txt.tmp"));
  CHECK_FALSE(fs::exists(dir / "missing" / "c.txt"));
}
