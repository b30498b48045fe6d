// `matmem bench ops`: forward + backward time of every registered op at the paper's shapes (batch 16,
// 15x15 hidden, 120 slots of 6x6), float32, one thread; plus the tape's fixed cost per op.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include "matmem/autodiff/profile.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/rnn/recurrent.hpp"
#include "matmem/models/training/clip.hpp"
#include "matmem/models/training/rmsprop.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "bench_configs_json.hpp"
#include "matmem/tools/bench_machine.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/options.hpp"
#include "matmem/tools/csv_file.hpp"

namespace matmem::tools {
namespace {
using Clock = std::chrono::steady_clock;

struct Options {
  std::string what;
  std::string op;
  std::vector<std::string> configs;
  int steps = 30, warmup = 5;
  int repeats = 7;
  double seconds = 0.05;  // per measurement
  std::string csv;
  bool profile = false;
  int threads = 1;
  std::vector<std::string> sets;  // --set key=value, on top of each configuration
  std::string safetensors;        // model: write the initial parameters here
};

// --set on top of a configuration. Its model and task are the configuration's, and threads is --threads.
void apply_sets(Config& c, const Options& o) {
  for (const std::string& kv : o.sets) {
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "model" || key == "task")
      throw Error(fmt::format("bench --set {}: the model and task are the configuration's; pick another --config", kv));
    if (key == "threads") throw Error(fmt::format("bench --set {}: use --threads", kv));
    c.assign(kv, "--set");
  }
}
// " (--set a=1 b=2)" for the tables' headings, or nothing.
std::string sets_text(const Options& o) {
  return o.sets.empty() ? std::string() : fmt::format(" (--set {})", fmt::join(o.sets, " "));
}

std::string threads_text(int n) { return n == 1 ? "one thread" : fmt::format("{} threads (the batch split)", n); }

struct Timing {
  double median_us, min_us;
};

// Runs body() in batches sized to take about `seconds`; returns median and min µs per call over `repeats`.
template <class F>
Timing time_it(F&& body, int repeats, double seconds) {
  for (int k = 0; k < 20; ++k) body();
  auto t0 = Clock::now();
  int calls = 0;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds / 4) {
    body();
    ++calls;
  }
  const int reps = std::max(1, int(calls * 4));
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    auto s = Clock::now();
    for (int k = 0; k < reps; ++k) body();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count() / reps);
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front()};
}

std::string shapes_of(const OpSample& s) {
  std::string out;
  for (const auto& in : s.inputs) out += (out.empty() ? "" : " ") + in.value.shape().str();
  return out;
}

int bench_ops(const Options& o) {
  const CsvFile file(o.csv, "bench");
  std::FILE* csv = file.get();
  if (csv) fmt::print(csv, "op,inputs,median_us,min_us,gflops\n");
  fmt::print("{:<22} {:<44} {:>10} {:>10} {:>8}\n", "op (float32, fwd+bwd)", "inputs", "median µs", "min µs",
             "GFLOP/s");
  for (const OpEntry& e : op_registry()) {
    if (!o.op.empty() && e.name != o.op) continue;
    Rng rng(7);
    OpSample sample = e.sample(rng, SampleSize::paper);
    std::vector<Tensor> inputs;
    for (const auto& in : sample.inputs) inputs.push_back(in.value.to(DType::f32));
    Tape tape(DType::f32);
    std::vector<Var> vars(inputs.size());
    Tensor seed;
    double flops = 0;
    auto body = [&] {
      tape.clear();
      for (std::size_t k = 0; k < inputs.size(); ++k) vars[k] = tape.input(inputs[k], true);
      Var y = sample.apply(tape, vars);
      if (seed.numel() != y.shape().numel()) {
        seed = Tensor(DType::f32, y.shape());
        for (std::int64_t k = 0; k < seed.numel(); ++k) seed.set(k, rng.normal());
      }
      tape.backward(y, seed);
      flops = tape.flops().total();
    };
    const Timing t = time_it(body, o.repeats, o.seconds);
    const double gflops = flops / (t.median_us * 1e3);
    fmt::print("{:<22} {:<44} {:>10.2f} {:>10.2f} {:>8.2f}\n", e.name, shapes_of(sample), t.median_us, t.min_us, gflops);
    if (csv) fmt::print(csv, "{},{},{:.4f},{:.4f},{:.4f}\n", e.name, shapes_of(sample), t.median_us, t.min_us, gflops);
  }
  // Fixed cost of a node: a chain of 1000 scale ops on one element, forward and backward.
  Tape tape(DType::f32);
  Tensor one(DType::f32, scalars(1));
  one.fill(1.0);
  constexpr int kChain = 1000;
  const Timing t = time_it(
      [&] {
        tape.clear();
        Var v = tape.input(one, true);
        for (int k = 0; k < kChain; ++k) v = scale(v, 0.999);
        tape.backward(v);
      },
      o.repeats, o.seconds);
  fmt::print("tape overhead: {:.1f} ns per op (forward + backward of `scale` on one element, chain of {})\n",
             t.median_us * 1e3 / kChain, kChain);
  if (csv)
    fmt::print(csv, "tape_overhead_ns_per_op,[1,1,1],{:.4f},{:.4f},0\n", t.median_us * 1e3 / kChain,
               t.min_us * 1e3 / kChain);
  return 0;
}
// --- bench train ---------------------------------------------------------------------------------------------
// The configurations of tools/bench_configs.json (compiled in; tools/bench_train_torch.py reads the same file):
// each one's settings are config keys set on top of the defaults, with no preset, so that neither a preset nor
// a default of a key the file gives can change what a benchmark times.
struct TrainBench {
  std::string name, note;
  nlohmann::json settings;  // config keys
  std::int64_t parameters = 0;
};

const std::vector<TrainBench>& train_benches() {
  static const std::vector<TrainBench> all = [] {
    std::vector<TrainBench> out;
    const nlohmann::json file = nlohmann::json::parse(kBenchConfigsJson);
    for (const nlohmann::json& c : file.at("configurations"))
      out.push_back({c.at("name"), c.at("note"), c.at("settings"), c.at("parameters")});
    return out;
  }();
  return all;
}

// The configuration's config as timed: the defaults, then its settings (seed and batch included), then --set.
Config bench_config(const TrainBench& b, const Options& o) {
  Config c;
  for (const auto& [key, value] : b.settings.items()) {
    if (key == "threads") throw Error(fmt::format("tools/bench_configs.json {}: threads is --threads", b.name));
    c.set_json(key, value, "tools/bench_configs.json " + b.name);
  }
  apply_sets(c, o);
  return c;
}

// What a configuration trains, from its resolved config: "MatNTM recall: batch 16, frames 7x5 -> 5x5, …".
std::string describe(const Config& c) {
  const std::unique_ptr<Task> task = make_task(c);
  const std::string model = c.str("model"), task_name = c.str("task");
  std::string layers;
  for (const auto& [r, k] : c.sizes("model.layers")) layers += fmt::format("{}{}x{}", layers.empty() ? "" : ",", r, k);
  std::string out = fmt::format("{} {}: batch {}, frames {}x{} -> {}x{}",
                                model == "matntm" ? "MatNTM" : model == "matdnc" ? "MatDNC" : model,
                                task_name, c.integer("batch"), task->input_rows(), task->input_cols(),
                                task->output_rows(), task->output_cols());
  if (task_name == "copy")
    out += fmt::format(", lengths {}..{}", c.integer("task.min_length"), c.integer("task.max_length"));
  if (task_name == "priority_sort")
    out += fmt::format(", {} inputs, {} outputs", c.integer("task.inputs"), c.integer("task.outputs"));
  if (task_name == "recall")
    out += fmt::format(", {}..{} items of {} matrices", c.integer("task.min_items"), c.integer("task.max_items"),
                       c.integer("task.item_matrices"));
  if (model == "matntm") {
    const std::string controller = c.str("ntm.controller");
    const bool lstm = controller == "lstm";
    out += fmt::format(", {} controller {}{}, {} slots of {}x{}, {}R+{}W heads, shifts -{}..{}",
                       lstm ? "MatLSTM" : controller == "ff" ? "feed-forward" : controller == "gru" ? "MatGRU" : "MatRNN",
                       layers, lstm ? fmt::format(" (forget bias {})", c.num("ntm.forget_bias")) : "",
                       c.integer("ntm.slots"), c.integer("ntm.slot_rows"), c.integer("ntm.slot_cols"),
                       c.integer("ntm.read_heads"), c.integer("ntm.write_heads"), c.integer("ntm.shift"),
                       c.integer("ntm.shift"));
  } else if (model == "matdnc") {
    const std::string controller = c.str("dnc.controller");
    out += fmt::format(", {} controller {}, {} slots of {}x{}, {}R+1W heads",
                       controller == "lstm" ? "MatLSTM" : controller == "ff" ? "feed-forward" : "MatRNN", layers,
                       c.integer("dnc.slots"), c.integer("dnc.slot_rows"), c.integer("dnc.slot_cols"),
                       c.integer("dnc.read_heads"));
  } else {
    out += fmt::format(", layers {}", layers);
  }
  out += fmt::format("; {} lr {}", c.str("optimizer"), c.num("lr"));
  if (c.str("optimizer") == "rmsprop")
    out += fmt::format(" (alpha {}, momentum {}{}{})", c.num("rmsprop.alpha"), c.num("rmsprop.momentum"),
                       c.flag("rmsprop.centered") ? ", centred" : "",
                       c.flag("rmsprop.eps_inside") ? fmt::format(", eps {} inside the root", c.num("rmsprop.eps")) : "");
  if (c.num("clip.value") > 0) out += fmt::format(", clip by value {}", c.num("clip.value"));
  if (c.num("clip.norm") > 0) out += fmt::format(", clip by norm {}", c.num("clip.norm"));
  return out;
}

std::vector<std::string> bench_names() {
  std::vector<std::string> names;
  for (const TrainBench& b : train_benches()) names.push_back(b.name);
  return names;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

struct StepTimes {
  std::vector<double> ms;
  double flops = 0;  // per step, mean
  double mean_ms() const {
    double total = 0;
    for (double x : ms) total += x;
    return total / double(ms.size());
  }
};

// `warmup` untimed calls of step(), then `steps` timed ones with the FLOPs the tape recorded for each.
template <class F, class G>
StepTimes time_steps(F&& step, G&& step_flops, int warmup, int steps) {
  for (int k = 0; k < warmup; ++k) step();
  StepTimes out;
  for (int k = 0; k < steps; ++k) {
    const auto s = Clock::now();
    step();
    out.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
    out.flops += step_flops();
  }
  out.flops /= steps;
  return out;
}

void report_row(const std::string& name, const StepTimes& t, std::int64_t batch, std::FILE* csv) {
  std::vector<double> v = t.ms;
  std::sort(v.begin(), v.end());
  const double med = v[v.size() / 2];
  const double mean = t.mean_ms();
  const double gflops = t.flops / (mean * 1e6);
  fmt::print("{:<30} {:>6} {:>10.3f} {:>9.3f} {:>9.3f} {:>11.1f} {:>9.2f} {:>9.1f}\n", name, v.size(), med, v.front(),
             v.back(), 1e3 * double(batch) / mean, gflops, peak_rss_mib());
  if (csv)
    fmt::print(csv, "{},{},{:.4f},{:.4f},{:.4f},{:.2f},{:.3f},{:.1f}\n", name, v.size(), med, v.front(), v.back(),
               1e3 * double(batch) / mean, gflops, peak_rss_mib());
}

// What the core allows an op kind, the profile's "limit": a GEMM op's FLOPs at the SGEMM peak or its operands'
// bytes (the tape counts them: at batch 1 mostly the weights, read and their gradients written) at the streaming
// rate of the level the model's parameters and gradients fit in, whichever takes longer; an op that declares its
// traffic (the memory ops), those bytes at the L2 streaming rate or its FLOPs at the multiply-add peak,
// whichever takes longer; none (0) for the others.
struct CoreLimits {
  double sgemm_gflops = 0, fma_gflops = 0, stream_gbps = 0;
  double operand_gbps = 0;        // streaming rate over a working set of the parameters and their gradients
  std::int64_t operand_bytes = 0;  // that working set
};
double limit_ns(const OpProfile::Row& r, const CoreLimits& c) {
  if (r.gemm) return std::max(r.flops / c.sgemm_gflops, c.operand_gbps > 0 ? r.traffic / c.operand_gbps : 0.0);
  if (r.traffic > 0) return std::max(r.traffic / c.stream_gbps, r.flops / c.fma_gflops);
  return 0;
}

// Per-op table of `steps` profiled training steps: calls, forward and backward µs per step, share of the step,
// and for the op kinds with a limit, that limit and how close to it they run.
void print_profile(const std::string& name, const OpProfile& p, int steps, double step_ms, const CoreLimits& c) {
  std::vector<OpProfile::Row> rows = p.rows;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.forward_ns + a.backward_ns > b.forward_ns + b.backward_ns;
  });
  const double step_us = 1e3 * step_ms;
  fmt::print("\n{}: where a step's {:.0f} µs go (mean of {} profiled steps; the timer adds its own cost)\n", name,
             step_us, steps);
  fmt::print("  {:<26} {:>10} {:>12} {:>12} {:>8} {:>10} {:>8} {:>9} {:>11}\n", "op", "calls/step", "forward µs",
             "backward µs", "share", "MiB/step", "GFLOP/s", "limit µs", "limit/time");
  double in_ops = 0, limited = 0, at_limits = 0;
  for (const OpProfile::Row& r : rows) {
    const double f = r.forward_ns / 1e3 / steps, b = r.backward_ns / 1e3 / steps;
    in_ops += f + b;
    const std::string rate = r.flops > 0 ? fmt::format("{:.1f}", r.flops / (r.forward_ns + r.backward_ns)) : "";
    const double limit = limit_ns(r, c) / 1e3 / steps;
    std::string limit_text, ratio_text;
    if (limit > 0) {
      limited += f + b;
      at_limits += limit;
      limit_text = fmt::format("{:.1f}", limit);
      ratio_text = fmt::format("{:.0f}%", 100 * limit / (f + b));
    }
    std::string line = fmt::format("  {:<26} {:>10.0f} {:>12.1f} {:>12.1f} {:>7.1f}% {:>10.2f} {:>8} {:>9} {:>11}",
                                   r.name, double(std::max(r.forward_calls, r.backward_calls)) / steps, f, b,
                                   100 * (f + b) / step_us, r.bytes / steps / (1 << 20), rate, limit_text, ratio_text);
    line.erase(line.find_last_not_of(' ') + 1);  // no blanks after the last filled column
    fmt::print("{}\n", line);
  }
  fmt::print("  {:<26} {:>10} {:>25.1f} {:>7.1f}%\n", "(outside kernels)", "", step_us - in_ops,
             100 * (step_us - in_ops) / step_us);
  if (limited == 0) return;
  fmt::print("  op kinds with a limit: {:.0f} µs a step, {:.0f} at their limits ({:.0f}%)\n", limited, at_limits,
             100 * at_limits / limited);
  fmt::print("  limits: GEMM ops' FLOPs at the SGEMM peak ({:.1f} GFLOP/s) or their operands at the streaming rate "
             "over the parameters and gradients ({:.0f} KiB: {:.1f} GB/s); memory ops' traffic at the best streaming "
             "rate within the L2 ({:.1f} GB/s) or their FLOPs at the multiply-add peak ({:.1f} GFLOP/s)\n",
             c.sgemm_gflops, double(c.operand_bytes) / 1024, c.operand_gbps, c.stream_gbps, c.fma_gflops);
}

// With threads, what each part of the timed steps took on its own thread (Trainer::part_seconds), summed.
struct PartTimes {
  std::vector<double> seconds;  // per part
  double slowest = 0;           // Σ over steps of the slowest part's seconds
  int steps = 0;
};

// `parts`, if given, gets the timed steps' part times.
StepTimes time_trainer(Trainer& t, int warmup, int steps, PartTimes* parts = nullptr) {
  int calls = 0;
  auto step = [&] {
    t.step();
    if (!parts || ++calls <= warmup || t.part_seconds().empty()) return;
    const std::vector<double>& s = t.part_seconds();
    parts->seconds.resize(s.size());
    for (std::size_t k = 0; k < s.size(); ++k) parts->seconds[k] += s[k];
    parts->slowest += *std::max_element(s.begin(), s.end());
    ++parts->steps;
  };
  return time_steps(step, [&] { return t.step_flops(); }, warmup, steps);
}

// Where a step on several threads goes: each part's mean time on its thread, the wait for the slowest, and
// the rest of the step, which one thread does (the batch drawn, the gradients added, clipped and applied) or
// which hands work between the threads.
void print_parts(const std::string& name, const PartTimes& p, double step_ms) {
  if (p.steps == 0) return;
  std::string each;
  double fastest = 1e300;
  for (std::size_t k = 0; k < p.seconds.size(); ++k) {
    const double us = 1e6 * p.seconds[k] / p.steps;
    fastest = std::min(fastest, us);
    each += fmt::format("{}{:.0f}", k == 0 ? "" : k + 1 == p.seconds.size() ? " and " : ", ", us);
  }
  const double slowest = 1e6 * p.slowest / p.steps, step_us = 1e3 * step_ms;
  fmt::print("  {}: its {} parts took {} µs a step on their threads (means); the step waited for the slowest "
             "part, {:.0f} µs ({:.0f}% over the fastest); the rest, {:.0f} µs ({:.1f}% of the step), ran on one "
             "thread or between them\n",
             name, p.seconds.size(), each, slowest, 100 * (slowest / fastest - 1), step_us - slowest,
             100 * (step_us - slowest) / step_us);
}

// The fixed step of the C++-peer comparison: a 2-layer MatRNN (6x5 in, 15x15 x2, 5x5 out), batch 16, 21 steps
// of random binary frames, mean BCE-with-logits on the last 10 outputs, RMSprop without momentum or clipping.
StepTimes time_matrnn_fixed(int warmup, int steps) {
  RecurrentConfig rc;
  rc.layers = {{15, 15}, {15, 15}};
  RecurrentModel model(rc, DType::f32, 1);
  model.build();
  RMSprop opt(model.params(), {.lr = 1e-4, .alpha = 0.95, .momentum = 0.0, .eps = 1e-8});
  Rng rng(3);
  Sequence seq;
  for (int t = 0; t < 21; ++t) {
    Tensor x(DType::f32, matrices(16, 6, 5));
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.bernoulli(0.5));
    seq.inputs.push_back(std::move(x));
    if (t >= 11) {
      Tensor y(DType::f32, matrices(16, 5, 5));
      for (std::int64_t k = 0; k < y.numel(); ++k) y.set(k, rng.bernoulli(0.5));
      seq.targets.push_back(std::move(y));
      seq.target_steps.push_back(t);
    }
  }
  Tape tape(DType::f32);
  Unroller u(model, tape);
  auto step = [&] {
    model.params().zero_grad();
    const SequenceResult& r = u.run(seq);
    tape.backward(r.loss);
    (void)opt.step();  // a non-finite update is not taken; the time is the same
  };
  return time_steps(step, [&] { return tape.flops().total(); }, warmup, steps);
}

// Refuses a --config that names no configuration of tools/bench_configs.json (nor one of `extra`).
void check_names(const Options& o, const char* what, const std::vector<std::string>& extra) {
  std::vector<std::string> known = bench_names();
  known.insert(known.end(), extra.begin(), extra.end());
  for (const std::string& name : o.configs)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw Error(fmt::format("bench {} --config {}: not a configuration ({})", what, name, fmt::join(known, ", ")));
}

// `bench model`: each configuration's model as matmem builds it, in float64 from the configuration's seed: its
// parameters (name and shape, in creation order) and their count, and the loss of the first batch the Trainer
// draws (step 0 of the data stream Rng(seed ^ 0x5eed5eed5eed5eed), models/training/trainer.cpp) before any
// update; with --safetensors, those initial parameters written to a file (float64, matmem's names), from which
// tools/bench_train_torch.py --check-loss computes the same loss in PyTorch.
int bench_model(const Options& o) {
  check_names(o, "model", {});
  if (!o.safetensors.empty() && o.configs.size() != 1)
    throw Error("bench model --safetensors: name one --config");
  for (const TrainBench& b : train_benches()) {
    if (!o.configs.empty() && std::find(o.configs.begin(), o.configs.end(), b.name) == o.configs.end()) continue;
    Config c = bench_config(b, o);
    const std::unique_ptr<Task> task = make_task(c);
    const std::unique_ptr<Model> model = make_model(c, *task, DType::f64);
    Rng data(std::uint64_t(c.integer("seed")) ^ 0x5eed5eed5eed5eedULL);
    Sequence seq;
    task->sample_step_into(0, data, seq, DType::f64);
    Tape tape(DType::f64);
    Unroller unroller(*model, tape);
    const double loss = unroller.run(seq).loss.item();
    fmt::print("{}: {} ({}){}\n", b.name, describe(c), b.note, sets_text(o));
    fmt::print("  parameters: {} values in {} tensors (tools/bench_configs.json: {})\n", model->params().element_count(),
               model->params().size(), b.parameters);
    TensorFile file;
    for (const auto& p : model->params()) {
      if (const Shape& sh = p->value.shape(); sh.slots > 1)  // a learned memory start: [slots,rows,cols]
        fmt::print("  parameter {} [{},{},{}]\n", p->name, sh.slots, sh.rows, sh.cols);
      else
        fmt::print("  parameter {} [{},{}]\n", p->name, sh.rows, sh.cols);
      file.tensors.emplace(p->name, p->value);
    }
    fmt::print("  float64 loss of the first batch ({} frames), initial parameters: {:.17g}\n", seq.inputs.size(),
               loss);
    if (!o.safetensors.empty()) {
      file.metadata["config"] = b.name;
      file.metadata["loss"] = fmt::format("{:.17g}", loss);
      write_safetensors(o.safetensors, file);
    }
  }
  return 0;
}

int bench_train(const Options& o) {
  const CsvFile file(o.csv, "bench");
  std::FILE* csv = file.get();
  if (csv) fmt::print(csv, "config,steps,ms_median,ms_min,ms_max,sequences_per_s,gflops,peak_rss_mib\n");
  auto wanted = [&](const std::string& name) {
    return o.configs.empty() || std::find(o.configs.begin(), o.configs.end(), name) != o.configs.end();
  };
  check_names(o, "train", {"matrnn2-fixed"});
  if (o.profile && o.threads > 1) throw Error("bench train: --profile times one thread; leave out --threads");
  Config probe;
  apply_sets(probe, o);  // a bad --set is refused before anything runs
  const double peak = sgemm_peak_gflops();
  CoreLimits limits;
  if (o.profile) limits = {peak, fma_peak_gflops(), l2_stream_gbps()};
  fmt::print("training steps (forward, backward, clip, optimiser), float32, {}{}; single-core SGEMM peak "
             "(1024^3) {:.1f} GFLOP/s, OpenBLAS's {} kernels\n", threads_text(o.threads), sets_text(o), peak,
             blas::core_name());
  fmt::print("{:<30} {:>6} {:>10} {:>9} {:>9} {:>11} {:>9} {:>9}\n", "config", "steps", "ms median", "ms min",
             "ms max", "sequences/s", "GFLOP/s", "RSS MiB");
  std::vector<std::function<void()>> profiles;  // printed after the table
  std::vector<std::function<void()>> threaded;  // with --threads: where the parts' time went, after the table
  std::vector<std::string> notes;               // configs that run fewer threads than asked
  for (const TrainBench& b : train_benches()) {
    if (!wanted(b.name)) continue;
    Config c = bench_config(b, o);
    c.set("threads", std::to_string(o.threads), "--threads");
    Trainer t(c);
    if (t.threads() != o.threads)
      notes.push_back(fmt::format("  {}: batch {}, so {} (Trainer::kMinPart)", b.name, c.integer("batch"),
                                  threads_text(t.threads())));
    PartTimes parts;
    const StepTimes times = time_trainer(t, o.warmup, o.steps, &parts);
    report_row(b.name, times, c.integer("batch"), csv);
    if (parts.steps > 0) threaded.push_back([=] { print_parts(b.name, parts, times.mean_ms()); });
    if (o.profile) {
      CoreLimits here = limits;
      for (const auto& p : t.model().params()) here.operand_bytes += 2 * std::int64_t(p->value.bytes());
      here.operand_gbps = stream_gbps_at(here.operand_bytes);
      OpProfile p;
      t.tape().set_profile(&p);
      const double ms = time_trainer(t, 0, o.steps).mean_ms();
      t.tape().set_profile(nullptr);
      profiles.push_back([=] { print_profile(b.name, p, o.steps, ms, here); });
    }
  }
  // The C++-peer step is its own loop on one tape, not a Trainer: one thread whatever --threads says.
  // It has no config keys either.
  const bool peer = wanted("matrnn2-fixed") && o.threads == 1 && o.sets.empty();
  if (peer) report_row("matrnn2-fixed", time_matrnn_fixed(o.warmup, o.steps), 16, csv);
  if (wanted("matrnn2-fixed") && !peer)
    notes.push_back(o.threads > 1 ? "  matrnn2-fixed: not timed: it runs one thread; leave out --threads"
                                  : "  matrnn2-fixed: not timed: a fixed step with no config keys; leave out --set");
  for (auto& print : threaded) print();
  for (auto& print : profiles) print();
  for (const std::string& note : notes) fmt::print("{}\n", note);
  for (const TrainBench& b : train_benches())
    if (wanted(b.name)) fmt::print("  {}: {} ({}){}\n", b.name, describe(bench_config(b, o)), b.note, sets_text(o));
  if (peer)
    fmt::print("  matrnn2-fixed: 2-layer MatRNN, batch 16, 21 fixed steps, BCE on the last 10, RMSprop (no momentum/clip)\n");
  return 0;
}
// --- bench scaling -------------------------------------------------------------------------------------------
// ms/step of the paper's MatNTM copy step as one size grows with the others at the paper's values; every
// sequence has a fixed length (min = max) so the steps are alike. The growth exponent is the least-squares
// slope of log(ms) on log(size) (1 = linear).
struct Sweep {
  const char* name;
  std::vector<std::int64_t> sizes;
  std::vector<std::string> (*sets)(std::int64_t size);
};

double slope(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    mx += std::log(x[k]);
    my += std::log(y[k]);
  }
  mx /= double(x.size());
  my /= double(y.size());
  double sxy = 0, sxx = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    sxy += (std::log(x[k]) - mx) * (std::log(y[k]) - my);
    sxx += (std::log(x[k]) - mx) * (std::log(x[k]) - mx);
  }
  return sxy / sxx;
}

int bench_scaling(const Options& o) {
  Config probe;
  apply_sets(probe, o);
  const std::vector<Sweep> sweeps = {
      {"length", {10, 20, 50, 100, 200},
       [](std::int64_t n) { return std::vector<std::string>{fmt::format("task.min_length={}", n), fmt::format("task.max_length={}", n)}; }},
      {"slots", {32, 64, 128, 256, 512, 1024},
       [](std::int64_t n) { return std::vector<std::string>{fmt::format("ntm.slots={}", n)}; }},
      {"matrix", {4, 8, 16, 32, 64},
       [](std::int64_t n) {
         return std::vector<std::string>{fmt::format("model.layers=\"{0}x{0},{0}x{0}\"", n),
                                         fmt::format("ntm.slot_rows={}", n), fmt::format("ntm.slot_cols={}", n)};
       }},
      {"batch", {1, 2, 4, 8, 16, 64, 256}, [](std::int64_t n) { return std::vector<std::string>{fmt::format("batch={}", n)}; }},
      {"heads", {1, 2, 4, 8},  // n read and n write heads
       [](std::int64_t n) {
         return std::vector<std::string>{fmt::format("ntm.read_heads={}", n), fmt::format("ntm.write_heads={}", n)};
       }},
  };
  fmt::print("MatNTM copy (paper config, sequences of fixed length 10 unless swept), float32, {}, {} steps each{}\n",
             threads_text(o.threads), o.steps, sets_text(o));
  fmt::print("{:<8} {:>6} {:>10} {:>12} {:>9}\n", "sweep", "size", "ms/step", "sequences/s", "RSS MiB");
  for (const Sweep& sw : sweeps) {
    if (!o.configs.empty() && std::find(o.configs.begin(), o.configs.end(), sw.name) == o.configs.end()) continue;
    std::vector<double> xs, ms;
    for (std::int64_t n : sw.sizes) {
      Config c;
      c.apply_preset("matntm", "copy");
      c.set("task.min_length", "10", "scaling");
      c.set("task.max_length", "10", "scaling");
      apply_sets(c, o);
      c.set("threads", std::to_string(o.threads), "--threads");
      for (const std::string& kv : sw.sets(n)) c.assign(kv, "scaling");
      Trainer t(c);
      const StepTimes st = time_trainer(t, 1, o.steps);
      const double mean = st.mean_ms();
      xs.push_back(double(n));
      ms.push_back(mean);
      fmt::print("{:<8} {:>6} {:>10.2f} {:>12.1f} {:>9.1f}\n", sw.name, n, mean, 1e3 * double(c.integer("batch")) / mean,
                 peak_rss_mib());
      std::fflush(stdout);
    }
    fmt::print("{:<8} growth exponent (log-log slope of ms/step): {:.2f}\n", sw.name, slope(xs, ms));
  }
  return 0;
}
}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Time ops or whole training steps (one thread unless --threads), or measure this machine's core");
  cmd->add_option("what", o->what,
                  "What to time: ops, train or scaling; machine: this core's caches, peak FLOP rates and bandwidth "
                  "at each working-set size; model: each train configuration's parameters and, in float64, the "
                  "loss of its first batch")
      ->required()
      ->check(CLI::IsMember({"ops", "train", "scaling", "machine", "model"}));
  cmd->add_option("--config", o->configs,
                  fmt::format("train: configurations to time ({}, matrnn2-fixed; default all; tools/bench_configs.json); "
                              "model: configurations to build; scaling: sweeps to run (length, slots, matrix, batch, heads)",
                              fmt::join(bench_names(), ", ")));
  cmd->add_option("--steps", o->steps, "train: timed steps per configuration")
      ->capture_default_str()
      ->check(whole_number(1, kMaxBenchSteps));
  cmd->add_option("--warmup", o->warmup, "train: untimed steps first")
      ->capture_default_str()
      ->check(whole_number(0, kMaxBenchSteps));
  cmd->add_option("--op", o->op, "Time one op only");
  cmd->add_option("--repeats", o->repeats, "Measurements per op (the median is reported)")
      ->capture_default_str()
      ->check(whole_number(1, kMaxBenchRepeats));
  cmd->add_option("--seconds", o->seconds, "Seconds per measurement")
      ->capture_default_str()
      ->check(real_number(0, kMaxBenchSeconds, true));
  cmd->add_option("--csv", o->csv, "Also write the table to this CSV file");
  cmd->add_option("--threads", o->threads,
                  "train, scaling: threads each training step splits its batch over (config key threads; "
                  "matrnn2-fixed runs only with 1)")
      ->capture_default_str()
      ->check(whole_number(1, kMaxThreads));
  cmd->add_option("--set", o->sets,
                  "train, scaling: override one config key of every configuration: --set key=value (repeatable; "
                  "not model, task or threads)");
  cmd->add_option("--safetensors", o->safetensors,
                  "model: write the configuration's initial parameters (float64) to this safetensors file");
  cmd->add_flag("--profile", o->profile, "train: then time every op kind over as many steps and print where a step goes");
  cmd->callback([o] {
    if (o->what == "ops") bench_ops(*o);
    if (o->what == "train") bench_train(*o);
    if (o->what == "scaling") bench_scaling(*o);
    if (o->what == "model") bench_model(*o);
    if (o->what == "machine") {
      const CsvFile file(o->csv, "bench");
      bench_machine(file.get());
    }
  });
}

}  // namespace matmem::tools
