// `matmem eval`: loads a checkpoint and reports the cost per sequence (bit errors) by sequence length
// (copy) or item count (recall), the paper's Figure 9, as a table, optionally CSV and a picture (--plot); with
// several --checkpoint, one table (and one line of the picture) per run.
#include <cerrno>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/ops/batch_norm.hpp"
#include "matmem/runtime/float_env.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/options.hpp"
#include "matmem/tools/csv_file.hpp"
#include "matmem/tools/plot/charts.hpp"

namespace matmem::tools {
namespace {
struct Options {
  std::vector<std::string> checkpoints;
  std::vector<std::string> sets;  // task.* keys of the evaluation sequences (the frames' shapes must not change)
  std::string sizes, csv, plot;
  int batches = 10;
  std::uint64_t seed = 2024;
  bool last = false;  // a run with held-out parts: its last parameters, not its best evaluation's
};

std::vector<std::int64_t> parse_sizes(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0' || errno == ERANGE || v < 1 || v > kMaxEvalSize)
      throw Error(fmt::format("{} (in {}) is not a whole number from 1 to {}", item, text, kMaxEvalSize));
    out.push_back(v);
  }
  return out;
}

// A model trained on a data set or a graph: its loss, error and accuracy over the whole validation and test
// parts, with the parameters of its best validation evaluation (best.safetensors) unless `last` or the run
// has none.
plot::EvalSeries run_data_set(Trainer& trainer, const std::string& checkpoint, std::FILE* csv, bool& csv_header,
                              bool several, bool last) {
  const SplitTask& task = *trainer.split_task();
  const std::string which = use_best_parameters(trainer, last);
  // Classes: the error rate and accuracy; reals (reconstruction): the loss is the MSE, the error the NMSE; bits
  // (the user's data with task.loss = bce): the BCE and the bit errors per sequence.
  const bool classes = task.target_kind() == TargetKind::classes;
  if (csv && csv_header)
    fmt::print(csv, "{}split,{},loss,error{}\n", several ? "run," : "", task.example_name(), classes ? ",accuracy" : "");
  csv_header = false;
  if (csv != stdout)
    fmt::print("{}{} after {} steps ({:.2f} epochs), {} parameters, on {}; {}\n{:>12} {:>8} {:>10} {:>10} {:>10}\n",
               several ? checkpoint + ": " : "", trainer.config().str("model"), trainer.steps_done(),
               double(trainer.steps_done()) / double(task.steps_per_epoch()), trainer.model().params().element_count(),
               task.name(), which, "part", task.example_name(),
               classes ? "loss" : task.target_kind() == TargetKind::bits ? "bce" : "mse",
               classes ? "error" : task.target_kind() == TargetKind::bits ? "bits/seq" : "nmse",
               classes ? "accuracy" : "");
  for (Split s : {Split::validation, Split::test}) {
    const SplitResult r = trainer.evaluate(s);
    if (r.count == 0) continue;
    if (csv != stdout)
      fmt::print("{:>12} {:>8} {:>10.4f} {:>10.4f} {}\n", split_name(s), r.count, r.loss, r.error,
                 classes ? fmt::format("{:>10.4f}", 1 - r.error) : "");
    if (csv)
      fmt::print(csv, "{}{},{},{:.6f},{:.6f}{}\n", several ? checkpoint + "," : "", split_name(s), r.count, r.loss,
                 r.error, classes ? fmt::format(",{:.6f}", 1 - r.error) : "");
  }
  return plot::EvalSeries{checkpoint, {}, {}, {}, {}};
}

// One checkpoint's table (and CSV rows, prefixed by its directory when several are evaluated).
plot::EvalSeries run_one(const Options& o, const std::string& checkpoint, std::FILE* csv, bool& csv_header,
                         std::string& size_name) {
  const bool several = o.checkpoints.size() > 1;
  auto trainer = Trainer::resume(checkpoint);
  // --set task.KEY=VALUE: the evaluation sequences from the trained task with those keys changed (repeat_copy's
  // task.fixed_size, task.size_by), frames of the same shapes.
  std::unique_ptr<Task> changed;
  if (!o.sets.empty()) {
    Config c = trainer->config();
    for (const std::string& set : o.sets) {
      if (set.rfind("task.", 0) != 0)
        throw Error(fmt::format("eval: --set {}: only the task's keys (task.*) change the evaluation sequences", set));
      c.assign(set, "--set");
    }
    changed = make_task(c);
    const Task& t = trainer->task();
    if (changed->input_rows() != t.input_rows() || changed->input_cols() != t.input_cols() ||
        changed->output_rows() != t.output_rows() || changed->output_cols() != t.output_cols())
      throw Error(fmt::format("eval: --set {}: the frames would change shape from those {} learned",
                              fmt::join(o.sets, " --set "), checkpoint));
  }
  const Task& task = changed ? *changed : trainer->task();
  if (trainer->split_task()) return run_data_set(*trainer, checkpoint, csv, csv_header, several, o.last);
  const std::string which = use_best_parameters(*trainer, o.last);
  if (!size_name.empty() && size_name != task.size_name())
    throw Error(fmt::format("eval: {} learned {}, by {}, unlike the checkpoints before it (by {}): evaluate them apart",
                            checkpoint, task.name(), task.size_name(), size_name));
  size_name = task.size_name();
  const std::vector<std::int64_t> sizes = o.sizes.empty() ? task.eval_sizes() : parse_sizes(o.sizes);  // checked
  plot::EvalSeries series{fmt::format("{} ({}, {} steps)", checkpoint, trainer->config().str("model"), trainer->steps_done()),
                          {}, {}, {}, {}};
  // Bit targets: also their cross-entropy in bits per sequence, Graves et al.'s cost (a probabilities task's
  // cost is one already), from the outputs and targets themselves.
  const bool xent = task.target_kind() == TargetKind::bits;
  if (csv && csv_header)
    fmt::print(csv, "{}{},bits_per_sequence,bits_per_sequence_min,bits_per_sequence_max,loss{}\n", several ? "run," : "",
               task.size_name(), task.target_kind() == TargetKind::probabilities ? ",optimal" : xent ? ",xent_bits" : "");
  csv_header = false;
  if (csv != stdout && several) fmt::print("{}:\n", checkpoint);
  if (csv != stdout)
    fmt::print("{} after {} steps, {} parameters, on {}; {}; {} batches of {} per size (seed {})\n{:>8} {:>16} {:>10} {:>10} {:>10}{}\n",
               trainer->config().str("model"), trainer->steps_done(), trainer->model().params().element_count(), task.name(),
               which, o.batches, task.batch(), o.seed, task.size_name(),
               task.target_kind() == TargetKind::bits ? "bits/sequence" : cost_name(task.target_kind()), "min", "max", "loss",
               task.target_kind() == TargetKind::probabilities ? fmt::format(" {:>10}", "optimal")
               : xent                                          ? fmt::format(" {:>10}", "xent bits")
                                                               : "");
  Tape& tape = trainer->tape();
  Unroller unroller(trainer->model(), tape);
  NoGrad no_grad(tape);
  const FlushDenormals flush(trainer->config().flag("flush_denormals"));  // as the run trained
  BatchNormScope running({BatchNormMode::running});  // batch norm on its running statistics
  Sequence seq;  // outlives each run: the tape points into its frames
  for (std::int64_t size : sizes) {
    Rng rng(o.seed + std::uint64_t(size));
    double bits = 0, loss = 0, lo = 1e300, hi = 0, optimal = 0, xent_bits = 0;
    std::size_t optimal_count = 0;
    for (int k = 0; k < o.batches; ++k) {
      task.sample_size_into(rng, size, seq, trainer->model().dtype());
      for (double v : seq.optimal_cost) optimal += v, ++optimal_count;
      const SequenceResult& r = unroller.run(seq);
      bits += r.bits;
      loss += r.loss.item();
      if (xent) {
        if (!seq.lane_mask.empty()) xent_bits = std::numeric_limits<double>::quiet_NaN();  // some lanes are no target
        for (std::size_t t = 0; t < seq.targets.size(); ++t)
          xent_bits += cross_entropy_bits_per_sequence(r.logits[t].value_copy(), seq.targets[t]);
      }
      lo = std::min(lo, r.bits);
      hi = std::max(hi, r.bits);
    }
    bits /= o.batches;
    loss /= o.batches;
    xent_bits /= o.batches;
    // A task with a cost floor (Sequence::optimal_cost: dynamic N-grams' optimal predictor) shows it beside; a
    // bit task its cross-entropy.
    const std::optional<double> extra = optimal_count ? std::optional(optimal / double(optimal_count))
                                        : xent        ? std::optional(xent_bits)
                                                      : std::nullopt;
    if (csv != stdout)
      fmt::print("{:>8} {:>16.3f} {:>10.3f} {:>10.3f} {:>10.4f}{}\n", size, bits, lo, hi, loss,
                 extra ? fmt::format(" {:>10.3f}", *extra) : "");
    if (csv)
      fmt::print(csv, "{}{},{:.4f},{:.4f},{:.4f},{:.6f}{}\n", several ? checkpoint + "," : "", size, bits, lo, hi, loss,
                 extra ? fmt::format(",{:.4f}", *extra) : "");
    series.size.push_back(double(size));
    series.bits.push_back(bits);
    series.lo.push_back(lo);
    series.hi.push_back(hi);
  }
  return series;
}

void run(const Options& o) {
  if (!o.plot.empty()) plot::format_of(o.plot, "--plot");  // refuse a wrong extension before evaluating
  const CsvFile file(o.csv, "eval");
  bool csv_header = true;
  std::vector<plot::EvalSeries> series;
  std::string size_name;
  for (const std::string& checkpoint : o.checkpoints) {
    series.push_back(run_one(o, checkpoint, file.get(), csv_header, size_name));
  }
  if (o.plot.empty()) return;
  plot::eval_chart(o.plot, size_name, series);
  fmt::print(file.get() == stdout ? stderr : stdout, "wrote {}\n", o.plot);
}
}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("eval", "Cost per sequence of a trained model by sequence length or item count");
  cmd->add_option("--checkpoint", o->checkpoints, "Run directory holding checkpoint.safetensors (repeat for several)")
      ->required();
  cmd->add_option("--sizes", o->sizes, "Comma-separated sizes: lengths (copy), item counts (recall), repeats or lengths (repeat_copy), inputs (priority_sort), bits (ngrams); default the task's")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              parse_sizes(text);
              return "";
            } catch (const Error& e) {
              return e.what();
            }
          },
          "LIST"));
  cmd->add_option("--set", o->sets,
                  "task.KEY=VALUE: evaluate on sequences of the trained task with this key changed, frames of the same "
                  "shapes (repeat_copy: task.fixed_size=10 holds the repeats at 10 over lengths; with "
                  "task.size_by=repeats, the length over repeat counts); repeatable");
  cmd->add_option("--batches", o->batches, "Batches per size")
      ->capture_default_str()
      ->check(whole_number(1, kMaxEvalBatches));
  cmd->add_option("--seed", o->seed, "Seed of the evaluation sequences")
      ->capture_default_str()
      ->check(whole_number(0, kMaxSeed));
  cmd->add_flag("--last", o->last,
               "Evaluate the last parameters, not those of the best evaluation of the held-out data (best.safetensors: "
               "a data set's validation part, a generated task's held-out batches, eval.interval)");
  cmd->add_option("--csv", o->csv, "Also write CSV to this file (- for standard output only)");
  cmd->add_option("--plot", o->plot, "Also draw cost against size, one line per checkpoint: FILE.png or FILE.svg");
  cmd->callback([o] { run(*o); });
}

}  // namespace matmem::tools
