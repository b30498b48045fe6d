// `matmem train`: trains a model on a task from a resolved config, with progress, metrics.csv,
// atomic checkpoints and bit-for-bit resumption. With no arguments it is the main job: the MatNTM on
// the matrix copy task with the paper's Table 1 settings.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/models/plugin.hpp"
#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/communicator.hpp"
#include "matmem/runtime/files.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/config_help.hpp"
#include "matmem/tools/options.hpp"
#include "matmem/tools/plot/commands.hpp"
#include "matmem/tools/progress.hpp"

namespace matmem::tools {
namespace {
struct Options {
  std::string model, task, config_file, out, resume;
  std::vector<std::string> sets;
  std::int64_t steps = 0;   // 0: not given
  std::int64_t seed = -1;   // -1: not given
  std::int64_t threads = 0; // 0: not given
  bool json = false, help_config = false, anomaly = false, overwrite = false, distributed = false;
};

// The files a run directory holds; a directory with any of them holds a run.
constexpr const char* kRunFiles[] = {"checkpoint.safetensors", "metrics.csv", "config.json"};

std::vector<std::string> run_files_in(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  for (const char* f : kRunFiles)
    if (std::filesystem::exists(dir / f)) found.push_back(f);
  return found;
}

// Whether the run resumed is continued in `out`, its own directory.
bool continues_in_place(const Options& o, const std::string& out) {
  return !o.resume.empty() && std::filesystem::exists(out) && std::filesystem::equivalent(out, o.resume);
}

// Where a run writes, never onto an earlier run unless asked:
// - `--out DIR`: DIR, refused if it holds a run (unless it is the run being resumed, or --overwrite, which
//   removes that run's files first);
// - no --out: runs/MODEL-TASK-seedS, or the first of runs/MODEL-TASK-seedS-2, -3, … that does not exist,
//   taken with an atomic mkdir so that two runs started at once get two directories.
std::string run_directory(const Options& o, const Config& c) {
  namespace fs = std::filesystem;
  const bool explicit_out = !o.out.empty() || !o.resume.empty();
  if (explicit_out) {
    const std::string out = o.out.empty() ? o.resume : o.out;
    const bool resuming_here = continues_in_place(o, out);
    const std::vector<std::string> found = run_files_in(out);
    if (!found.empty() && !resuming_here) {
      if (!o.overwrite) {
        std::string list;
        for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
        throw Error(fmt::format("--out {}: holds a run already ({}); continue it with `matmem train --resume {}`, "
                                "replace it with --overwrite, or choose another directory",
                                out, list, out));
      }
      for (const std::string& f : found) fs::remove(fs::path(out) / f);
    }
    fs::create_directories(out);
    return out;
  }
  const std::string base = fmt::format("runs/{}-{}-seed{}", c.str("model"), c.str("task"), c.integer("seed"));
  fs::create_directories(fs::path(base).parent_path());
  if (o.overwrite) {
    for (const std::string& f : run_files_in(base)) fs::remove(fs::path(base) / f);
    fs::create_directories(base);
    return base;
  }
  for (int k = 1;; ++k) {
    const std::string dir = k == 1 ? base : fmt::format("{}-{}", base, k);
    if (fs::create_directory(dir)) return dir;  // false: it exists already
  }
}

void print_config_keys() { fmt::print("{}", config_help(output_width())); }

Config resolve(const Options& o) {
  return Config::resolve([&](Config& c) {
    if (!o.config_file.empty()) c.merge_file(o.config_file);
    for (const std::string& kv : o.sets) c.assign(kv, "--set");
    if (!o.model.empty()) c.set_json("model", o.model, "--model");
    if (!o.task.empty()) c.set_json("task", o.task, "--task");
    if (o.steps > 0) {
      c.set_json("steps", o.steps, "--steps");
      c.set_json("epochs", 0, "--steps");  // --steps counts steps, whatever a preset's epochs say
    }
    if (o.seed >= 0) c.set_json("seed", o.seed, "--seed");
    if (o.threads > 0) c.set_json("threads", o.threads, "--threads");
    if (o.anomaly) c.set_json("anomaly", true, "--anomaly");
    c.set_json("plugins", loaded_plugin_paths(), "--plugin");  // the run records the plugins it was started with
  });
}

// One sample of the copy/recall task drawn fresh, shown as target and output grids ('#' is 1).
void show_example(Trainer& t) {
  Rng rng(12345);
  const Task& task = t.task();
  // A size within the trained ones (the task's size range), so that the example shows what training did.
  std::int64_t size = std::string(task.name()) == "copy"            ? 6
                      : std::string(task.size_name()) == "pairs" ? task.eval_sizes()[0]
                                                                  : 3;
  if (const auto [smallest, largest] = task.size_range(); largest >= 1) size = std::clamp(size, smallest, largest);
  // As many sequences as a training pass runs (a micro-batch; the whole batch with micro_batch = 0): a whole
  // large batch's pass would hold more memory than training did (batch 256 with 1024 slots: 0.8 GB against 0.2).
  const Sequence batch = task.sample_size(rng, size, t.model().dtype());
  const std::int64_t micro = t.memory_estimate().micro_batch;
  const std::int64_t shown = micro > 0 ? std::min(task.batch(), micro) : task.batch();
  Sequence seq;
  batch_slice(batch, 0, shown, seq);
  Tape& tape = t.tape();
  Unroller u(t.model(), tape);
  NoGrad no_grad(tape);
  const SequenceResult& r = u.run(seq);
  fmt::print("\nexample ({} {}, first sequence of the batch): target | output\n", task.size_name(), size);
  std::vector<Tensor> logits;  // copies, whatever the run's dtype
  for (const Var& y : r.logits) logits.push_back(y.value_copy());
  for (std::int64_t i = 0; i < task.output_rows(); ++i) {
    std::string line;
    for (std::size_t k = 0; k < seq.targets.size(); ++k) {
      for (std::int64_t j = 0; j < task.output_cols(); ++j) line += seq.targets[k].at(0, i, j) > 0.5 ? '#' : '.';
      line += ' ';
    }
    line += "| ";
    for (const Tensor& y : logits) {
      for (std::int64_t j = 0; j < task.output_cols(); ++j) line += y.at(0, i, j) > 0 ? '#' : '.';
      line += ' ';
    }
    fmt::print("  {}\n", line);
  }
  if (task.target_kind() == TargetKind::bits)
    fmt::print("  bits wrong in {} such sequences: {:.2f} per sequence\n", shown, r.bits);
  else
    fmt::print("  {} in {} such sequences: {:.4f}\n", cost_name(task.target_kind()), shown, r.bits);
}

// metrics.csv's columns; runs from before the last two were added have a header without them.
constexpr const char* kMetricsHeader = "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped,xent_bits\n";
struct Columns {
  bool skipped = true, xent_bits = true;
};
Columns columns_of(const std::string& header) {
  return {header.ends_with(",skipped") || header.find(",skipped,") != std::string::npos,
          header.ends_with(",xent_bits")};
}

// A run resumed into a directory of its own (a branch) starts its metrics.csv with the rows of the run it
// continues, up to the checkpoint's step (with their seconds, and the columns the source lacks filled: no
// skipped steps, no cross-entropy), so its learning curve is whole.
std::string history(const std::string& from, std::int64_t step) {
  std::ifstream in((std::filesystem::path(from) / "metrics.csv").string());
  std::string line, rows;
  if (!std::getline(in, line)) return rows;
  const Columns has = columns_of(line);
  while (std::getline(in, line)) {
    char* end = nullptr;
    const long long at = std::strtoll(line.c_str(), &end, 10);
    if (end == line.c_str() || *end != ',' || at > step) break;
    rows += line + (has.skipped ? "" : ",0") + (has.xent_bits ? "" : ",nan") + "\n";
  }
  return rows;
}

// A resumed run repeats the steps after its checkpoint: drop the rows an interrupted run wrote past it.
void drop_rows_after(const std::string& path, std::int64_t step) {
  std::ifstream in(path);
  std::string line, kept;
  bool header = true;
  while (std::getline(in, line)) {
    if (!header && std::strtoll(line.c_str(), nullptr, 10) > step) break;
    kept += line + "\n";
    header = false;
  }
  in.close();
  write_file_durably(path, kept);  // killed here, the run keeps its rows: they are dropped again on resume
}

// A CSV file a run appends rows to (metrics.csv, validation.csv), opened to append. A new one is created whole
// with its first lines (write_file_durably): opened empty with its header still in the stream's buffer, a run
// killed as it started left an empty file, which `sweep --status` and `plot` refuse and a resume never gave a
// header. An existing one (a resume in place) first loses the rows an interrupted run wrote past `step`.
std::ofstream open_rows(const std::string& path, bool fresh, const std::string& first_lines, std::int64_t step) {
  if (fresh) write_file_durably(path, first_lines);
  else drop_rows_after(path, step);
  std::ofstream rows(path, std::ios::app);
  if (!rows) throw Error(fmt::format("cannot write {}", path));
  return rows;
}

void run(const Options& o) {
  const Communicator* ranks = nullptr;
  if (o.distributed) {
    if (!Communicator::launched())
      throw Error("--distributed: no MPI launcher started this process; start it with `mpirun -np K matmem train "
                  "--distributed …` (or srun)");
    ranks = &Communicator::world();
  }
  // Rank 0 of a distributed run writes the run; the others only train alongside it.
  if (ranks && ranks->rank() != 0) {
    std::unique_ptr<Trainer> t =
        o.resume.empty() ? std::make_unique<Trainer>(resolve(o), ranks)
                         : Trainer::resume(o.resume, o.steps, o.threads, ranks, o.sets);
    while (t->steps_done() < t->steps_total()) t->step();
    return;
  }
  std::unique_ptr<Trainer> trainer;
  if (!o.resume.empty()) {
    if (!o.model.empty() || !o.task.empty() || !o.config_file.empty() || o.seed >= 0)
      throw Error("--resume takes the config from the checkpoint; only --steps, --threads, --out and --set of the "
                  "learning rate, its schedule, clipping and logging may be given with it");
    if (!o.sets.empty() && (o.out.empty() || continues_in_place(o, o.out)))
      throw Error(fmt::format("--set with --resume branches the run: give --out NEWDIR for the branch, so that {} "
                              "stays as it was", o.resume));
    trainer = Trainer::resume(o.resume, o.steps, o.threads, ranks, o.sets);
  } else {
    trainer = std::make_unique<Trainer>(resolve(o), ranks);
  }
  const Config& c = trainer->config();
  const std::string out = run_directory(o, c);
  const std::int64_t total = trainer->steps_total(), log_every = c.integer("log_every"),
                     ckpt_every = c.integer("checkpoint_every");
  const std::string metrics_path = (std::filesystem::path(out) / "metrics.csv").string();
  const bool fresh = !std::filesystem::exists(metrics_path) || !continues_in_place(o, out);
  std::ofstream metrics = open_rows(
      metrics_path, fresh,
      kMetricsHeader + (fresh && !o.resume.empty() ? history(o.resume, trainer->steps_done()) : std::string()),
      trainer->steps_done());
  Columns columns;  // a run from before a column was added keeps its header
  if (!fresh) {
    std::string header;
    std::getline(std::ifstream(metrics_path), header);
    columns = columns_of(header);
  }
  // Whole or not at all: a run killed here must not leave an empty config.json for `sweep` to trip on.
  write_file_durably((std::filesystem::path(out) / "config.json").string(), c.dump() + "\n");
  if (!o.json)
    fmt::print("training {} on {} ({} parameters{}), steps {}..{}, seed {}{}, into {}\n", c.str("model"),
               c.str("task"), trainer->model().params().element_count(),
               trainer->model().params().buffer_element_count() > 0
                   ? fmt::format(" and {} buffer values", trainer->model().params().buffer_element_count())
                   : "",
               trainer->steps_done() + 1, total,
               c.integer("seed"),
               trainer->ranks() > 1 ? fmt::format(", {} ranks × {} threads", trainer->ranks(), trainer->threads())
               : trainer->threads() > 1 ? fmt::format(", {} threads", trainer->threads())
                                        : "",
               out);
  if (!o.json) fmt::print("memory: {}\n", trainer->memory_estimate().str());
  if (!o.json && c.str("lr.schedule") != "constant")
    fmt::print("learning rate: {} {}\n", c.num("lr"),
               c.str("lr.schedule") == "step"
                   ? fmt::format("times {} every {} steps", c.num("lr.step_factor"), c.integer("lr.step_every"))
                   : fmt::format("on a cosine down to {} of it at step {}", c.num("lr.cosine_final"), total));
  Progress progress(total, ::isatty(STDOUT_FILENO), o.json, cost_name(trainer->task().target_kind()));
  const auto t0 = std::chrono::steady_clock::now();
  double loss = 0, bits = 0, norm = 0, frames = 0, xent = 0, last_loss = 0, last_bits = 0, last_draw = 0;
  std::int64_t n = 0, done_here = 0;
  std::int64_t window_start = trainer->steps_done(), last_window = 0;  // the last logged window's steps
  double reduce_seconds = 0;  // distributed: gathering and adding the ranks' gradients, waits included
  // The best evaluation so far, as the rules keep it (figures "best", "best_step").
  const auto best_score = [&] { return trainer->figure("best", std::numeric_limits<double>::infinity()); };
  const auto best_step_of = [&] { return std::int64_t(trainer->figure("best_step", -1)); };
  // What the rules say (a curriculum's level, a skipped update, a decay, a stop), printed as they say it.
  auto print_messages = [&] {
    for (const std::string& line : trainer->take_messages())
      if (!o.json) {
        progress.finish();
        fmt::print("{}\n", line);
      }
  };
  print_messages();
  // validation.csv, a row per evaluation of the held-out data (eval.interval): the validation part of a data set
  // or the graph task, a generated task's held-out batches (eval.batches, eval.seed).
  std::ofstream validation;
  if (c.integer("eval.interval") > 0) {
    const std::string path = (std::filesystem::path(out) / "validation.csv").string();
    const bool fresh_validation = fresh || !std::filesystem::exists(path);
    validation = open_rows(path, fresh_validation,
                           trainer->split_task() ? "step,epoch,loss,error,accuracy,best,best_step\n"
                                                 : "step,loss,bits_per_sequence,best,best_step\n",
                           trainer->steps_done());
  }
  while (trainer->steps_done() < total && !trainer->stopped()) {
    const StepStats s = trainer->step();
    ++done_here;
    reduce_seconds += trainer->reduce_seconds();
    if (s.skipped && !s.nonfinite.empty())
      fmt::print(stderr, "step {} skipped ({} of at most {}): {}\n", trainer->steps_done(), trainer->skipped(),
                 c.integer("nonfinite.max_skips"), s.nonfinite);
    print_messages();
    if (s.nonfinite.empty()) {  // a non-finite step's NaN stays out of the means; a rule's skip is measured
      loss += s.loss;
      bits += s.bits;
      xent += s.xent_bits;
      norm += s.grad_norm;
      frames += double(s.frames);
      ++n;
    }
    const std::int64_t step = trainer->steps_done();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress.terminal() && secs - last_draw > 0.2) {  // redraw the bar with the window so far
      progress.update(step, n ? loss / n : 0.0, n ? bits / n : 0.0, secs / double(done_here));
      last_draw = secs;
    }
    if (step % log_every == 0 || step == total) {
      const double nan = std::numeric_limits<double>::quiet_NaN();  // a window of skipped steps only
      last_loss = n ? loss / n : nan;
      last_bits = n ? bits / n : nan;
      last_window = step - window_start;
      window_start = step;
      metrics << fmt::format("{},{:.3f},{:.6f},{:.4f},{:.4f},{:.1f}", step, secs, last_loss, last_bits,
                             n ? norm / n : nan, n ? frames / n : nan)
              << (columns.skipped ? fmt::format(",{}", trainer->skipped_updates()) : "")
              << (columns.xent_bits ? fmt::format(",{:.4f}\n", n ? xent / n : nan) : "\n");
      metrics.flush();
      progress.update(step, last_loss, last_bits, secs / double(done_here));
      loss = bits = norm = frames = xent = 0;
      n = 0;
    }
    if (trainer->evaluated() && !trainer->split_task()) {
      const SplitResult& v = trainer->last_validation();
      const double b = best_score();
      const std::int64_t b_step = best_step_of();
      validation << fmt::format("{},{:.6f},{:.6f},{:.6f},{}\n", step, v.loss, v.error, b, b_step);
      validation.flush();
      if (!o.json && !progress.terminal())
        fmt::print("step {}: held-out loss {:.4f}, {} {:.4f} (best {} {:.4f} at step {})\n", step, v.loss,
                   cost_name(trainer->task().target_kind()), v.error, trainer->config().str("eval.metric"), b,
                   b_step);
    } else if (trainer->evaluated()) {
      const SplitResult& v = trainer->last_validation();
      const double b = best_score();
      const std::int64_t b_step = best_step_of();
      const double epoch = double(step) / double(trainer->split_task()->steps_per_epoch());
      validation << fmt::format("{},{:.3f},{:.6f},{:.6f},{:.6f},{:.6f},{}\n", step, epoch, v.loss, v.error, 1 - v.error,
                                b, b_step);
      validation.flush();
      const bool classes = trainer->task().target_kind() == TargetKind::classes;
      const bool by_loss = trainer->config().str("eval.metric") == "loss";
      if (!o.json && !progress.terminal())
        fmt::print("step {} (epoch {:.2f}): validation loss {:.4f}, {} {:.4f} (best {} {:.4f} at step {})\n", step,
                   epoch, v.loss, classes ? "accuracy" : cost_name(trainer->task().target_kind()),
                   classes ? 1 - v.error : v.error, by_loss ? "loss" : classes ? "accuracy" : "error",
                   classes && !by_loss ? 1 - b : b, b_step);
    }
    if ((ckpt_every > 0 && step % ckpt_every == 0) || step == total || trainer->stopped()) trainer->save(out);
  }
  progress.finish();
  // A run with held-out parts: the best evaluation's parameters (the model keeps them from here on) on the
  // validation and test parts.
  const double best = best_score();
  const std::int64_t best_step = best_step_of();
  std::string held_out_line;
  nlohmann::json held_out_json;
  if (trainer->split_task() && restore_best(*trainer)) {
    const SplitResult v = trainer->evaluate(Split::validation), t = trainer->evaluate(Split::test);
    const bool classes = trainer->task().target_kind() == TargetKind::classes;
    auto score = [&](const SplitResult& r) {
      return classes ? fmt::format("accuracy {:.4f}", 1 - r.error) : fmt::format("error {:.4f}", r.error);
    };
    held_out_line = fmt::format("{}parameters of step {} (best validation {} {:.4f}; {}/best.safetensors): "
                                "validation {}, test {}\n",
                                trainer->stopped() ? fmt::format("stopped early after step {}; ", trainer->steps_done()) : "",
                                best_step, trainer->config().str("eval.metric"), best, out, score(v), score(t));
    held_out_json = {{"best_step", best_step}, {"stopped_early", trainer->stopped()},
                     {"validation_loss", v.loss},     {"validation_error", v.error},
                     {"test_loss", t.loss},           {"test_error", t.error}};
  } else if (best_step >= 0) {
    // A generated task's best parameters stay in best.safetensors; the model keeps its last.
    held_out_line = fmt::format("{}best parameters: step {} (held-out {} {:.4f} on {} batches; {}/best.safetensors, "
                                "which `matmem eval` and `matmem inspect` use unless --last)\n",
                                trainer->stopped() ? fmt::format("stopped early after step {}; ", trainer->steps_done()) : "",
                                best_step, trainer->config().str("eval.metric"), best, c.integer("eval.batches"), out);
    held_out_json = {{"best_step", best_step}, {"stopped_early", trainer->stopped()}, {"held_out", best}};
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.json) {
    nlohmann::json j = {{"steps", trainer->steps_done()},
                        {"seconds", secs},
                        {"seconds_per_step", done_here ? secs / double(done_here) : 0.0},
                        {"loss", last_loss},
                        {"bits", last_bits},
                        {"params", trainer->model().params().element_count()},
                        {"skipped", trainer->skipped()},
                        {"skipped_updates", trainer->skipped_updates()}};
    for (const auto& [name, value] : trainer->figures()) j["rules"][name] = value;
    for (const auto& [name, value] : trainer->model().learned_scalars()) j["learned"][name] = value;
    if (!held_out_json.is_null()) j["best"] = held_out_json;
    if (trainer->ranks() > 1) {
      j["ranks"] = trainer->ranks();
      j["reduce_seconds_per_step"] = done_here ? reduce_seconds / double(done_here) : 0.0;
    }
    fmt::print("{}\n", j.dump());
    return;
  }
  fmt::print("done: {} steps in {:.1f} s ({:.2f} ms/step); last {} steps: loss {:.4f}, {:.2f} {}{}{}\n",
             done_here, secs, done_here ? 1e3 * secs / double(done_here) : 0.0, last_window, last_loss, last_bits,
             trainer->task().target_kind() == TargetKind::bits ? "bits wrong per sequence"
                                                                : cost_name(trainer->task().target_kind()),
             trainer->skipped() ? fmt::format("; {} steps skipped for a NaN/Inf", trainer->skipped()) : "",
             trainer->summary().empty() ? "" : "; " + trainer->summary());
  for (const auto& [name, value] : trainer->model().learned_scalars()) fmt::print("learned {} = {:.6g}\n", name, value);
  fmt::print("{}", held_out_line);
  fmt::print("checkpoint: {}/checkpoint.safetensors, learning curve: {}\n", out, metrics_path);
  if (!trainer->split_task()) show_example(*trainer);
  fmt::print("{}\n", plot_hint(out));
}
}  // namespace

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a model on a task (no options: the MatNTM on the matrix copy task, Table 1 settings)");
  cmd->add_option("--model", o->model,
                  "The model (default matntm, alias ntm; models/README.md lists them, and an unknown name is refused "
                  "with the registered ones)");
  cmd->add_option("--task", o->task,
                  "The task (default copy; models/README.md lists them, and an unknown name is refused with the "
                  "registered ones)");
  cmd->add_option("--config", o->config_file, "JSON file of config keys (see --help-config)");
  cmd->add_option("--set", o->sets,
                  "Override one config key: --set key=value (repeatable); with --resume and --out NEWDIR, a branch "
                  "of the run with another learning rate, schedule, clipping or logging");
  cmd->add_option("--steps", o->steps, "Training steps (with --resume: the new total)")
      ->check(whole_number(1, kMaxSteps));
  cmd->add_option("--seed", o->seed, "Seed of the run")->check(whole_number(0, kMaxSeed));
  cmd->add_option("--threads", o->threads,
                  "Split each step's batch over this many threads (config key threads; default 1; allowed with "
                  "--resume)")
      ->check(whole_number(1, kMaxThreads));
  cmd->add_option("--out", o->out,
                  "Directory for metrics.csv, config.json and checkpoints (default runs/MODEL-TASK-seedS, or "
                  "runs/MODEL-TASK-seedS-2, -3, … when that exists); a directory holding a run is refused");
  cmd->add_flag("--overwrite", o->overwrite, "Replace the run in --out (or the default directory) instead of refusing");
  cmd->add_option("--resume", o->resume, "Continue the run whose checkpoint is in this directory");
  cmd->add_flag("--json", o->json, "Print only one final JSON line: steps, seconds, seconds_per_step, loss, bits, params");
  cmd->add_flag("--anomaly", o->anomaly, "Check every op for NaN/Inf (slower)");
  cmd->add_flag("--distributed", o->distributed,
                "Data-parallel over the ranks of `mpirun -np K`: each rank trains its part of every batch, the "
                "gradients are added in rank order; rank 0 writes the run (see models/training/trainer.hpp)");
  cmd->add_flag("--help-config", o->help_config, "List every config key with its default and meaning");
  cmd->callback([o] {
    if (o->help_config) return print_config_keys();
    run(*o);
  });
}

}  // namespace matmem::tools
