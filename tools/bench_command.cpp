// `matmem bench ops`: forward + backward time of every registered op at the paper's shapes (batch 16,
// 15x15 hidden, 120 slots of 6x6), float32, one thread; plus the tape's fixed cost per op.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "runtime/error.hpp"
#include "tools/commands.hpp"

namespace matmem::tools {
namespace {
using Clock = std::chrono::steady_clock;

struct Options {
  std::string what;
  std::string op;
  int repeats = 7;
  double seconds = 0.05;  // per measurement
  std::string csv;
};

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
  std::FILE* csv = nullptr;
  if (!o.csv.empty()) {
    csv = std::fopen(o.csv.c_str(), "w");
    if (!csv) throw Error(fmt::format("bench: cannot write {}", o.csv));
    fmt::print(csv, "op,inputs,median_us,min_us,gflops\n");
  }
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
      flops = tape.flops().forward + tape.flops().backward;
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
  if (csv) {
    fmt::print(csv, "tape_overhead_ns_per_op,[1,1,1],{:.4f},{:.4f},0\n", t.median_us * 1e3 / kChain,
               t.min_us * 1e3 / kChain);
    std::fclose(csv);
  }
  return 0;
}
}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("bench", "Time ops (and, later, training steps) on one thread");
  cmd->add_option("what", o->what, "What to time: ops")->required()->check(CLI::IsMember({"ops"}));
  cmd->add_option("--op", o->op, "Time one op only");
  cmd->add_option("--repeats", o->repeats, "Measurements per op (the median is reported)")->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "Seconds per measurement")->capture_default_str();
  cmd->add_option("--csv", o->csv, "Also write the table to this CSV file");
  cmd->callback([o] {
    if (o->what == "ops") bench_ops(*o);
  });
}

}  // namespace matmem::tools
