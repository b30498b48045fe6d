// `matmem inspect --checkpoint DIR --out FILE`: runs a trained model on one generated sequence and draws its
// input, target and output frames, the memory slots it wrote and its heads' weightings over time (the paper's
// Figures 6 and 8); for a DNC also its usage and allocation over time and its link matrix. The model's
// weightings and memory come from what it exposes (Step::expose) to a StepObserver during a run without
// gradients. --csv writes the drawn values as numbers, one per line (`time,series,row,col,value`): every input
// frame, target and output (the output as a probability, at its target's time step), every weighting (row 0, col
// the slot) and a DNC's usage and allocation; the memory is left out (a slot's values a step).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "matmem/models/tasks/tasks.hpp"
#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/models/tasks/flat_frames.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/tools/csv_file.hpp"
#include "matmem/tools/one_sequence.hpp"
#include "matmem/tools/options.hpp"
#include "matmem/tools/plot/charts.hpp"
#include "matmem/tools/plot/commands.hpp"

namespace matmem::tools {
namespace {
struct Options {
  std::string checkpoint, out, csv;
  std::int64_t length = 0, items = 0;
  std::uint64_t seed = 1;
  bool last = false;  // the last parameters, not the best evaluation's
};

// Sample 0 of a [B, slots, rows, cols] value, one Matrix per slot.
std::vector<plot::Matrix> first_sample(const Tensor& v) {
  const Shape s = v.shape();
  std::vector<plot::Matrix> out(std::size_t(s.slots));
  for (std::int64_t k = 0; k < s.slots; ++k) {
    plot::Matrix& m = out[std::size_t(k)];
    m.rows = s.rows, m.cols = s.cols;
    for (std::int64_t i = 0; i < s.rows; ++i)
      for (std::int64_t j = 0; j < s.cols; ++j) m.values.push_back(v.get(s.offset(0, k, i, j)));  // batch-interleaved
  }
  return out;
}

// Keeps sample 0 of every exposed tensor, by name, in time order.
class Recorder : public StepObserver {
 public:
  void observe(std::int64_t t, std::string_view name, const Var& value) override {
    std::vector<std::vector<plot::Matrix>>& steps = seen_[std::string(name)];
    if (std::int64_t(steps.size()) <= t) steps.resize(std::size_t(t + 1));
    steps[std::size_t(t)] = first_sample(value.value_copy());
  }
  const std::map<std::string, std::vector<std::vector<plot::Matrix>>>& seen() const { return seen_; }

 private:
  std::map<std::string, std::vector<std::vector<plot::Matrix>>> seen_;
};

void write_csv(const std::string& path, const plot::InspectData& d) {
  const CsvFile csv(path, "inspect --csv");
  std::FILE* f = csv.get();
  fmt::print(f, "time,series,row,col,value\n");
  auto frame = [&](std::int64_t t, const char* series, const plot::Matrix& m) {
    for (std::int64_t i = 0; i < m.rows; ++i)
      for (std::int64_t j = 0; j < m.cols; ++j)
        fmt::print(f, "{},{},{},{},{}\n", t, series, i, j, m.values[std::size_t(i * m.cols + j)]);
  };
  for (std::size_t t = 0; t < d.inputs.size(); ++t) frame(std::int64_t(t), "input", d.inputs[t]);
  for (std::size_t k = 0; k < d.targets.size(); ++k) {
    frame(d.target_steps[k], "target", d.targets[k]);
    frame(d.target_steps[k], "output", d.outputs[k]);
  }
  for (const auto* group : {&d.slot_states, &d.weightings})
    for (const plot::InspectData::Weighting& w : *group)
      for (std::size_t t = 0; t < w.w.size(); ++t)
        for (std::size_t n = 0; n < w.w[t].size(); ++n) fmt::print(f, "{},{},0,{},{}\n", t, w.name, n, w.w[t][n]);
}

// How sharp each head's weighting is, in two numbers a head: the mean over the time steps of its largest entry and
// of its sum. A head that addresses one slot a step has a largest entry near 1; one spread evenly over N slots,
// near 1/N (a memory used as one average: the MatDNC's recall runs that fail, models/results/dnc.md); a sum
// near 0 (a DNC's write gate closed) writes nothing.
std::string heads_summary(const std::vector<plot::InspectData::Weighting>& weightings) {
  if (weightings.empty() || weightings[0].w.empty()) return "";
  const std::size_t steps = weightings[0].w.size(), slots = weightings[0].w[0].size();
  std::string s = fmt::format("heads, means over the {} time steps of the largest weight (1/{} = {:.3f} if spread "
                              "evenly) and of the sum:\n",
                              steps, slots, 1.0 / double(slots));
  for (const plot::InspectData::Weighting& w : weightings) {
    double largest = 0, sum = 0;
    for (const std::vector<double>& row : w.w) {
      largest += row.empty() ? 0.0 : *std::max_element(row.begin(), row.end());
      for (double v : row) sum += v;
    }
    const double n = double(std::max<std::size_t>(1, w.w.size()));
    s += fmt::format("  {:<20} largest {:.3f}  sum {:.3f}\n", w.name, largest / n, sum / n);
  }
  return s;
}

void run(const Options& o) {
  plot::format_of(o.out);
  auto trainer = Trainer::resume(o.checkpoint);
  const std::string which = use_best_parameters(*trainer, o.last);
  const Task& task = trainer->task();
  const OneSequence one = one_sequence(task, o.length, o.items, o.seed, trainer->model().dtype(), "inspect");
  const Sequence& seq = one.seq;
  const std::int64_t size = one.size;
  Tape& tape = trainer->tape();
  Unroller unroller(trainer->model(), tape);
  Recorder recorder;
  unroller.set_observer(&recorder);
  NoGrad no_grad(tape);
  const SequenceResult& r = unroller.run(seq);

  plot::InspectData d;
  double bits = 0;
  for (const Tensor& x : seq.inputs) d.inputs.push_back(first_sample(x)[0]);
  d.target_steps = seq.target_steps;
  for (std::size_t k = 0; k < seq.targets.size(); ++k) {
    d.targets.push_back(first_sample(seq.targets[k])[0]);
    plot::Matrix y = first_sample(r.logits[k].value_copy())[0];
    for (std::size_t i = 0; i < y.values.size(); ++i) {
      y.values[i] = 1.0 / (1.0 + std::exp(-y.values[i]));
      bits += double((y.values[i] > 0.5) != (d.targets.back().values[i] > 0.5));
    }
    d.outputs.push_back(std::move(y));
  }
  // A task with its frames as rows (task.flatten) is drawn in its own frames' shapes: row i·c + j is X_ij.
  if (const auto* flat = dynamic_cast<const FlatFrames*>(&task)) {
    const Task& inner = flat->inner();
    for (plot::Matrix& x : d.inputs) x.rows = inner.input_rows(), x.cols = inner.input_cols();
    for (auto* frames : {&d.targets, &d.outputs})
      for (plot::Matrix& y : *frames) y.rows = inner.output_rows(), y.cols = inner.output_cols();
  }
  const std::string model = trainer->config().str("model");
  // The picture's title is what fits its width; the terminal's line says which parameters and when.
  d.title = fmt::format("{} on {}, {} {} (sequence seed {}): {} bits wrong", model, task.name(), task.size_name(),
                        size, o.seed, bits);
  const std::string line = fmt::format("{} on {}, {} {} (sequence seed {}), after {} training steps, {}: {} bits wrong",
                                       model, task.name(), task.size_name(), size, o.seed, trainer->steps_done(),
                                       which, bits);
  // Every step's values of one slot state or weighting, [time][slot].
  auto per_slot = [](const std::string& name, const std::vector<std::vector<plot::Matrix>>& steps) {
    plot::InspectData::Weighting w{name, {}};
    for (const auto& s : steps) {
      std::vector<double> row;
      for (const plot::Matrix& m : s) row.insert(row.end(), m.values.begin(), m.values.end());
      w.w.push_back(std::move(row));
    }
    return w;
  };
  for (const auto& [name, steps] : recorder.seen()) {
    if (name == "memory") {
      for (const auto& s : steps) d.memory.push_back(s);
      continue;
    }
    if (name.size() < 10 || name.substr(name.size() - 10) != "/weighting") continue;
    d.weightings.push_back(per_slot(name, steps));
  }
  // Read heads first, then write heads (the map sorts "read…" before "write…" already). A DNC (a model
  // exposing its allocation) is drawn in the order of its step: usage, allocation, the write weighting, the
  // read weightings; then its link matrix, and its slots as a plain range (no shifts: the memory is no ring).
  const auto& seen = recorder.seen();
  if (seen.count("allocation")) {
    d.circular = false;
    if (seen.count("usage")) d.slot_states.push_back(per_slot("usage", seen.at("usage")));
    d.slot_states.push_back(per_slot("allocation weighting", seen.at("allocation")));
    std::stable_partition(d.weightings.begin(), d.weightings.end(),
                          [](const plot::InspectData::Weighting& w) { return w.name.rfind("write", 0) == 0; });
    if (seen.count("link"))
      for (const auto& s : seen.at("link")) d.links.push_back(s.empty() ? plot::Matrix{} : s[0]);
  }
  plot::inspect_sheet(o.out, d);
  if (!o.csv.empty()) write_csv(o.csv, d);
  // With the CSV on standard output, the summary goes to standard error.
  fmt::print(o.csv == "-" ? stderr : stdout, "{}\n{}wrote {}{}\n", line, heads_summary(d.weightings), o.out,
             o.csv.empty() || o.csv == "-" ? "" : " and " + o.csv);
}
}  // namespace

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Runs a trained model on one sequence and draws its frames, memory and weightings (PNG or SVG)");
  cmd->add_option("--checkpoint", o->checkpoint, "Run directory holding checkpoint.safetensors")->required();
  add_sequence_options(cmd, o->length, o->items, o->seed);
  cmd->add_option("--out", o->out, "Picture to write: FILE.png or FILE.svg")->required();
  cmd->add_option("--csv", o->csv,
                  "Also write the drawn values (frames, outputs as probabilities, weightings; not the memory) as "
                  "time,series,row,col,value lines to this file ('-': standard output)");
  cmd->add_flag("--last", o->last,
                "Draw the last parameters, not those of the best evaluation of the held-out data (best.safetensors)");
  cmd->callback([o] { run(*o); });
}

}  // namespace matmem::tools
