// `matmem gradcheck`: every registered op (or one) through gradcheck in float64, as a table of the library's
// checks (op_checks(): each size, and the op applied twice so that a backward that assigns instead of adding
// fails); or, with --model, a whole model unrolled a few steps on a batch of its task, one row per parameter.
#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "matmem/models/core/model_gradcheck.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/commands.hpp"
#include "matmem/tools/options.hpp"

namespace matmem::tools {
namespace {
struct Options {
  bool all = false;
  std::string op;
  std::string size = "all";
  std::uint64_t seed = 1234;
  bool seed_given = false;
  // --model: the model, its task, the config's overrides and the time steps unrolled.
  std::string model, task;
  std::vector<std::string> sets;
  std::int64_t steps = 3;
};

// The longest time steps --model unrolls: each parameter element costs two unrolls of them.
constexpr std::int64_t kMaxUnrolledSteps = 1000;

// The model's config as `matmem train` resolves it (defaults, the model and task's preset, --set), with a batch
// of 2 unless --set gives one.
Config resolve_model_config(const Options& o) {
  return Config::resolve([&](Config& c) {
    c.set_json("batch", 2, "gradcheck");
    for (const std::string& kv : o.sets) c.assign(kv, "--set");
    c.set_json("model", o.model, "--model");
    if (!o.task.empty()) c.set_json("task", o.task, "--task");
    if (o.seed_given) c.set_json("seed", std::int64_t(o.seed), "--seed");
  });
}

// `gradcheck --model`: the model in float64 on its task's batch, every parameter (learned starts included).
int run_model(const Options& o) {
  const Config c = resolve_model_config(o);
  const std::unique_ptr<Task> task = make_task(c);
  const std::unique_ptr<Model> model = make_model(c, *task, DType::f64);
  if (model->dtype() != DType::f64)
    throw Error(fmt::format("gradcheck --model {}: its factory made {} parameters when asked for float64: a model "
                            "factory must make the model with the dtype it is given (models/registry.hpp)",
                            c.str("model"), name_of(model->dtype())));
  const std::uint64_t seed = std::uint64_t(c.integer("seed"));
  Rng rng(seed);
  const Sequence seq = task_sequence(*task, int(o.steps), rng);
  ModelGradcheckOptions options;
  options.seed = seed;
  options.require_gradient = false;  // a task's batch need not reach every parameter: reported, not failed
  fmt::print("gradcheck {} on {}: {} time steps (the end of a sequence of its smallest size), batch {}, float64; {} parameter "
             "values, each moved off its start by N(0, {}²) noise, checked by central differences (2 unrolls each)\n",
             c.str("model"), c.str("task"), seq.inputs.size(), task->batch(), model->params().element_count(),
             options.sigma);
  const ModelGradcheckReport r = gradcheck_model(*model, seq, options);

  std::vector<std::string> learned_starts;
  for (const StateDecl& s : model->states())
    if (s.start == StateDecl::learned) learned_starts.push_back(fmt::format("{}/init/{}", model->name(), s.name));
  std::size_t width = 9;
  for (const GradcheckTensor& t : r.tensors) width = std::max(width, t.name.size());
  fmt::print("{:<{}} {:<14} {:>8} {:>12} {:>12} {:>12}  {}\n", "parameter", width, "shape", "elements", "|dL/dθ| max",
             "max abs err", "max rel err", "result");
  int failed = 0, negligible = 0;
  for (std::size_t k = 0; k < r.tensors.size(); ++k) {
    const GradcheckTensor& t = r.tensors[k];
    const ParameterGradient& g = r.gradients[k];
    const bool learned_start = std::find(learned_starts.begin(), learned_starts.end(), t.name) != learned_starts.end();
    failed += t.failed > 0;
    negligible += g.negligible;
    fmt::print("{:<{}} {:<14} {:>8} {:>12.3e} {:>12.3e} {:>12.3e}  {}{}{}\n", t.name, width, t.shape.str(),
               t.elements_checked, g.largest, t.max_abs_error, t.max_rel_error, t.failed ? "FAIL" : "pass",
               g.negligible ? " (negligible gradient)" : "", learned_start ? " (learned start)" : "");
  }
  if (!r.passed) fmt::print("{}\n", r.GradcheckReport::str());
  // Each op kind on the tape alone, applied twice to its registry sample: an op whose backward assigns passes
  // the model's check wherever its inputs have one use, and fails it where they have two.
  int ops_failed = 0;
  std::vector<std::string> unregistered;
  for (const OpTwiceCheck& k : r.ops_applied_twice) {
    if (!k.registered) {
      unregistered.push_back(k.op);
    } else if (!k.report.passed) {
      ++ops_failed;
      fmt::print("op {} FAILS applied twice to its sample, each input with two uses: its backward must add (+=) into "
                 "each input's gradient, not assign it\n  {}\n", k.op, k.report.str());
    }
  }
  fmt::print("{} op kinds on its tape, each applied twice to its registry sample: {} failed{}\n",
             r.ops_applied_twice.size(), ops_failed,
             unregistered.empty() ? "" : fmt::format(" ({} not registered, so not checked alone: {})", unregistered.size(),
                                                     fmt::join(unregistered, ", ")));
  fmt::print("{} parameters, {} failed; loss {:.6g}", r.tensors.size(), failed, r.loss);
  if (negligible)
    fmt::print("; {} with a gradient below {:g} of the loss on this batch, whose check says little (another --seed or "
               "more --steps may reach them)", negligible, kNegligibleGradient);
  fmt::print("\n");
  return r.passed ? 0 : 1;
}

int run(const Options& o) {
  if (!o.model.empty()) return run_model(o);
  std::vector<const OpEntry*> ops;
  if (!o.op.empty()) {
    const OpEntry* e = find_op(o.op);
    if (!e) {
      std::string names;
      for (const OpEntry& x : op_registry()) names += (names.empty() ? "" : ", ") + x.name;
      throw Error(fmt::format("gradcheck: no op named {} (registered: {})", o.op, names));
    }
    ops.push_back(e);
  } else {
    for (const OpEntry& e : op_registry()) ops.push_back(&e);
  }
  // Every check of the library's (op_checks(): three sizes once, two of them with the op applied twice), at the
  // sizes asked for.
  std::vector<OpCheck> checks;
  for (const OpCheck& k : op_checks())
    if (o.size == "all" || o.size == name_of(k.size)) checks.push_back(k);

  fmt::print("{:<24} {:<6} {:<6} {:>9} {:>13} {:>13}  {}\n", "op", "size", "uses", "elements", "max abs err",
             "max rel err", "result");
  int failed = 0;
  for (const OpEntry* e : ops) {
    // The sizes whose check applied once failed: op_checks() checks a size once before it checks it twice.
    std::vector<SampleSize> failed_once;
    for (const OpCheck& k : checks) {
      GradcheckReport r = gradcheck_op(*e, k.size, o.seed, k.uses);
      fmt::print("{:<24} {:<6} {:<6} {:>9} {:>13.3e} {:>13.3e}  {}\n", e->name, name_of(k.size), name_of(k.uses),
                 r.elements_checked, r.max_abs_error, r.max_rel_error, r.passed ? "pass" : "FAIL");
      if (!r.passed) {
        ++failed;
        fmt::print("  {}\n", r.str());
        if (k.uses == Uses::once) failed_once.push_back(k.size);
        if (k.uses == Uses::twice && std::find(failed_once.begin(), failed_once.end(), k.size) == failed_once.end())
          fmt::print("  {} passes applied once and fails applied twice, each input feeding two uses: its backward "
                     "must add (+=) into each input's gradient, not assign it (ops/README.md, \"Writing an op\")\n",
                     e->name);
      }
    }
  }
  fmt::print("{} checks, {} failed (float64 central differences, random upstream gradient{}; twice: the op applied "
             "twice to its inputs, y = f(x) + f(x)/2, so every input has two uses)\n",
             ops.size() * checks.size(), failed,
             o.size == "all" || o.size == "small" ? "; small sizes: full Jacobian" : "");
  return failed ? 1 : 0;
}
}  // namespace

void add_gradcheck_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "gradcheck", "Check every op's gradient (or one op's, or a whole model's) against central differences");
  CLI::Option* all = cmd->add_flag("--all", o->all, "Check every registered op (the default when --op is not given)");
  CLI::Option* op = cmd->add_option("--op", o->op, "Check one op by name");
  CLI::Option* size = cmd->add_option("--size", o->size,
                  "Sample sizes: small (below any SIMD width), large (past several), lanes (batch 19: the memory "
                  "ops' SIMD lanes over the batch, full and tail) or all; at small and lanes the op is also checked "
                  "applied twice to its inputs (a backward that assigns its gradient instead of adding fails)")
      ->check(CLI::IsMember({"small", "large", "lanes", "all"}))
      ->capture_default_str();
  CLI::Option* model =
      cmd->add_option("--model", o->model,
                      "Check a whole model (bundled or registered) in float64, unrolled --steps time steps on a batch "
                      "of its task, every parameter and learned start, one row each")
          ->excludes(all, op, size);
  cmd->add_option("--task", o->task, "With --model: the task whose batch it runs (default: the config's)")->needs(model);
  cmd->add_option("--steps", o->steps, "With --model: the time steps unrolled (the last of the task's sequence)")
      ->needs(model)
      ->capture_default_str()
      ->check(whole_number(1, kMaxUnrolledSteps));
  cmd->add_option("--set", o->sets, "With --model: override one config key, key=value (repeatable; batch is 2 unless set)")
      ->needs(model);
  cmd->add_option("--seed", o->seed,
                  "Seed for the sample inputs (--op, --all); with --model the config's seed: the model's start, its "
                  "batch and the noise that moves its parameters (default: the config's)")
      ->capture_default_str()
      ->check(whole_number(0, kMaxSeed))
      ->each([o](const std::string&) { o->seed_given = true; });
  cmd->callback([o] {
    if (int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace matmem::tools
