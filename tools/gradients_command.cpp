// `matmem gradients --checkpoint DIR`: where a trained model's gradient is large. Runs the model on one generated
// sequence (as `matmem inspect` draws it) with gradients, and prints
//   * every parameter's gradient norm ‖∂L/∂θ‖_F, largest first (--top of them), and the whole gradient's norm;
//   * for each value the model exposes (Step::expose: a MatNTM's memory and weightings, a DNC's usage, links, …)
//     the norm of its gradient at every time step, ‖∂L/∂v_t‖_F over the batch, and its largest over its
//     smallest nonzero one,
// so that a gradient that grows backwards through the time steps (a recurrence that amplifies it) can be told
// from one that one step makes large. L is the model's loss on the sequence, the mean BCE over its target
// elements as the tape computes it (a run with loss.reduction = sequence trains on E times it, E the target
// elements of a sequence: every norm here scales by E).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/one_sequence.hpp"
#include "matmem/tools/options.hpp"

namespace matmem::tools {
namespace {
struct Options {
  std::string checkpoint;
  std::int64_t length = 0, items = 0, top = 12;
  std::uint64_t seed = 1;
  bool last = false;
};

// Keeps every exposed value's node by name, in time order (the tape keeps their gradients: set_retain_grads).
class Exposed : public StepObserver {
 public:
  void observe(std::int64_t t, std::string_view name, const Var& value) override {
    std::vector<Var>& steps = seen[std::string(name)];
    if (std::int64_t(steps.size()) <= t) steps.resize(std::size_t(t + 1));
    steps[std::size_t(t)] = value;
  }
  std::map<std::string, std::vector<Var>> seen;
};

double norm_of(const Tensor& t) {
  double s = 0;
  for (std::int64_t k = 0; k < t.numel(); ++k) s += t.get(k) * t.get(k);
  return std::sqrt(s);
}

double grad_norm(const Var& v) {
  if (!v.valid() || !v.requires_grad()) return 0;
  return norm_of(v.grad_copy());
}

void run(const Options& o) {
  auto trainer = Trainer::resume(o.checkpoint);
  const std::string which = use_best_parameters(*trainer, o.last);
  const Task& task = trainer->task();
  const OneSequence one = one_sequence(task, o.length, o.items, o.seed, trainer->model().dtype(), "gradients");
  Tape& tape = trainer->tape();
  Model& model = trainer->model();
  Unroller unroller(model, tape);
  Exposed exposed;
  unroller.set_observer(&exposed);
  model.params().zero_grad();
  tape.set_retain_grads(true);
  const SequenceResult& r = unroller.run(one.seq);
  const double loss = r.loss.item();
  tape.backward(r.loss);

  std::vector<std::pair<double, std::string>> params;
  double total = 0;
  for (const auto& p : model.params()) {
    if (p->buffer) continue;
    const double n = norm_of(p->grad);
    total += n * n;
    params.push_back({n, p->name});
  }
  std::sort(params.begin(), params.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  fmt::print("{} on {}, {} {} (sequence seed {}), after {} training steps, {}: loss {:.6g}, gradient norm {:.4g}\n",
             trainer->config().str("model"), task.name(), task.size_name(), one.size, o.seed, trainer->steps_done(),
             which, loss, std::sqrt(total));
  const std::size_t shown = std::min(params.size(), std::size_t(o.top));
  fmt::print("\nparameters, largest gradient norm first ({} of {}):\n", shown, params.size());
  std::size_t width = 0;
  for (std::size_t k = 0; k < shown; ++k) width = std::max(width, params[k].second.size());
  for (std::size_t k = 0; k < shown; ++k)
    fmt::print("  {:<{}}  {:.4g}\n", params[k].second, width, params[k].first);

  if (exposed.seen.empty()) {
    fmt::print("\nthe model exposes no values (Step::expose)\n");
    return;
  }
  std::vector<std::string> names;
  std::vector<std::vector<double>> norms;
  std::size_t steps = 0;
  for (const auto& [name, vars] : exposed.seen) {
    names.push_back(name);
    std::vector<double> n;
    for (const Var& v : vars) n.push_back(grad_norm(v));
    steps = std::max(steps, n.size());
    norms.push_back(std::move(n));
  }
  fmt::print("\ngradient norm of each exposed value by time step, ‖∂L/∂v_t‖:\n  {:>4}", "t");
  for (const std::string& name : names) fmt::print("  {:>{}}", name, std::max<std::size_t>(name.size(), 10));
  fmt::print("\n");
  for (std::size_t t = 0; t < steps; ++t) {
    fmt::print("  {:>4}", t);
    for (std::size_t k = 0; k < names.size(); ++k) {
      const std::size_t w = std::max<std::size_t>(names[k].size(), 10);
      if (t < norms[k].size()) fmt::print("  {:>{}.3e}", norms[k][t], w);
      else fmt::print("  {:>{}}", "", w);
    }
    fmt::print("\n");
  }
  fmt::print("\nlargest over smallest nonzero, over the time steps:\n");
  for (std::size_t k = 0; k < names.size(); ++k) {
    double hi = 0, lo = 0;
    for (double v : norms[k])
      if (v > 0) hi = std::max(hi, v), lo = lo == 0 ? v : std::min(lo, v);
    fmt::print("  {:<{}}  {}\n", names[k], width, lo > 0 ? fmt::format("{:.3g}", hi / lo) : std::string("no gradient"));
  }
}
}  // namespace

void add_gradients_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "gradients", "Runs a trained model on one sequence and prints its parameters' gradient norms and, at every "
                   "time step, the gradient norm of each value it exposes (memory, weightings)");
  cmd->add_option("--checkpoint", o->checkpoint, "Run directory holding checkpoint.safetensors")->required();
  add_sequence_options(cmd, o->length, o->items, o->seed);
  cmd->add_option("--top", o->top, "Parameters listed, largest gradient first")
      ->capture_default_str()
      ->check(whole_number(1, 100000));
  cmd->add_flag("--last", o->last,
                "Use the last parameters, not those of the best evaluation of the held-out data (best.safetensors)");
  cmd->callback([o] { run(*o); });
}

}  // namespace matmem::tools
