// Sweeps: many `matmem train` runs from one plan file, each in its own directory, restartable.
//
// A plan is a JSON object (every key optional):
//   {"out": "runs/sweeps/copy",                 where the runs go (default runs/sweep-<plan file's stem>,
//                                               relative to the directory the sweep is started in)
//    "config": "models/configs/x.json",         a file of config keys, as `matmem train --config` reads it
//    "steps": 20000,                            each run's step budget (default: the config's)
//    "seeds": [1, 2, 3, 4, 5],                  every run is trained once per seed (default [1])
//    "set":  {"task": "copy", "log_every": 100},            config keys common to every run
//    "grid": {"model": ["matrnn", "matlstm"], "lr": [1e-4, 3e-4]},   every combination of these values
//    "runs": [{"name": "ntm-lstm", "set": {"model": "matntm", "ntm.controller": "lstm"}}, …]}
// (a run may name its own "config" instead of the plan's).
// Each explicit run (or one unnamed run when there are none) is trained for every combination of the grid
// and every seed: config = the preset of its model and task, then the config file, then "set", then the run's
// own "set", then the grid's values, then the steps and the seed. A run's directory is OUT/NAME/seedS, NAME being the run's name and the grid's
// values ("ntm-lstm/lr=0.0003", or "model=matrnn,lr=0.0001" without explicit runs).
//
// A run directory is in one of four states: complete (its checkpoint reached the budget), interrupted (a
// checkpoint before it: continued with `matmem train --resume`), begun (files but no checkpoint yet: a run
// killed before its first checkpoint, started again), or new. A sweep started again after being killed
// therefore trains only what is left, and since a resumed run continues bit for bit, it ends with the same
// results as one never interrupted.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace matmem::tools::sweep {

struct PlannedRun {
  std::string name;                                       // OUT-relative, without the seed
  std::int64_t seed = 1;
  std::int64_t steps = 0;                                 // the budget, from the resolved config
  std::string config;                                     // a config file, or empty
  std::vector<std::pair<std::string, std::string>> sets;  // key, JSON value: the `--set`s of `matmem train`
  std::filesystem::path dir;                              // OUT/name/seedS
  std::string resolved;                                   // its whole config as JSON, as `matmem train` resolves it
};

struct Plan {
  std::filesystem::path file, out;
  std::vector<PlannedRun> runs;
};

// Reads and checks a plan: unknown keys, values of the wrong kind, config keys or values `matmem train`
// would refuse, duplicate run names; each refused naming the file and the run.
Plan read_plan(const std::filesystem::path& file);

enum class State { complete, stopped, interrupted, begun, fresh };  // stopped: early, by eval.patience
inline bool finished(State s) { return s == State::complete || s == State::stopped; }
struct RunState {
  State state = State::fresh;
  std::int64_t steps_done = 0;  // the checkpoint's step
};
// From the run directory; throws (naming it) if its checkpoint cannot be read: a sweep never replaces one.
RunState run_state(const PlannedRun& run);

// What a run with a checkpoint was trained with that the plan no longer gives it: each config key of the run's
// config.json whose value differs from the plan's, as "key = run's value (the plan: plan's value)". The budget
// (steps, epochs) may grow and is not compared, but under a cosine schedule, whose length it is (a new one would
// change the rate of the steps left); nor are `plugins` (a resume checks them itself) or keys one side does not
// have (added or removed between versions). Empty for a run without a checkpoint; throws (naming the
// file) for a config.json that is not JSON.
std::vector<std::string> changed_settings(const PlannedRun& run);

// The arguments of the `matmem train` that carries a run on from its state (without the program name).
std::vector<std::string> train_arguments(const PlannedRun& run, const RunState& state);

// One row of the results table, from the run's metrics.csv.
struct RunResult {
  std::string name;
  std::int64_t seed = 0, steps_done = 0, budget = 0;
  std::int64_t window_steps = 1000;     // the steps of 16,000 sequences (1,000 where the config has no batch)
  double loss = 0, bits = 0;            // means over the last window_steps steps logged; NaN before any. `bits`
                                        // is the task's cost (metrics.csv's bits_per_sequence), named by cost_name
  std::string cost_name = "bits/seq";   // bits/seq, errors/seq or nmse (models/tasks/tasks.hpp)
  std::int64_t first_below_1bit = -1;   // first logged step where the mean over the last window_steps < 1 bit
                                        // (bits only: an error rate or an NMSE is below 1 from the start)
  int collapses = -1;                   // stretches of such means above 5 bits after the first below 1 (bits
                                        // only; -1: not a cost of bits, or no mean yet)
  double best = 0;                      // the lowest such mean and the step it ends at (best_step -1: no mean
  std::int64_t best_step = -1;          // yet, best unset)
  double seconds = 0;                   // training time, summed over the processes that trained it
  std::string status;                   // complete, interrupted at step N, not started, failed: …
};
RunResult run_result(const PlannedRun& run);

// The table as Markdown and as CSV.
std::string markdown_table(const std::vector<RunResult>& results);
std::string csv_table(const std::vector<RunResult>& results);
// Writes OUT/results.md and OUT/results.csv, each whole (write_file_durably, runtime/files.hpp).
void write_tables(const Plan& plan, const std::vector<RunResult>& results);

}  // namespace matmem::tools::sweep
