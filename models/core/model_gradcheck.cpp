#include "matmem/models/core/model_gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "matmem/ops/registry.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

std::vector<std::string> ModelGradcheckReport::negligible() const {
  std::vector<std::string> names;
  for (const ParameterGradient& g : gradients)
    if (g.negligible && !g.flat) names.push_back(g.name);
  return names;
}

std::string ModelGradcheckReport::str() const {
  std::string s = GradcheckReport::str();
  for (const ParameterGradient& g : gradients)
    if (g.negligible && !g.flat)
      s += fmt::format("\n  {}: negligible gradient, largest |dL/dθ| {:.3g} for loss {:.6g} (below {:g} of it)",
                       g.name, g.largest, loss, kNegligibleGradient);
  for (const OpTwiceCheck& k : ops_applied_twice)
    if (k.registered && !k.report.passed)
      s += fmt::format("\n  op {} fails applied twice to its sample, each input with two uses (its backward must add "
                       "into each input's gradient, not assign it): {}", k.op, k.report.str());
  return s;
}

Sequence random_sequence(const Model& m, std::int64_t batch, int steps, std::uint64_t seed) {
  Rng rng(seed);
  Sequence s;
  for (int t = 0; t < steps; ++t) {
    Tensor x(DType::f64, matrices(batch, m.input_rows(), m.input_cols()));
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform(-1, 1));
    s.inputs.push_back(std::move(x));
    if (t == 0) continue;
    Tensor y(DType::f64, matrices(batch, m.output_rows(), m.output_cols()));
    for (std::int64_t k = 0; k < y.numel(); ++k) y.set(k, rng.bernoulli(0.5));
    s.targets.push_back(std::move(y));
    s.target_steps.push_back(t);
  }
  return s;
}

Sequence task_sequence(const Task& task, int steps, Rng& rng) {
  if (steps < 1) throw Error(fmt::format("gradcheck: {} steps: unroll at least 1", steps));
  const auto [smallest, largest] = task.size_range();
  const Sequence whole = largest >= 1 ? task.sample_size(rng, smallest, DType::f64) : task.sample(rng, DType::f64);
  const std::int64_t length = std::int64_t(whole.inputs.size());
  const std::int64_t first = std::max<std::int64_t>(0, length - steps);
  Sequence s;
  s.kind = whole.kind;
  s.graph = whole.graph;
  s.inputs.assign(whole.inputs.begin() + first, whole.inputs.end());
  const std::int64_t batch = whole.inputs.empty() ? 0 : whole.inputs[0].shape().batch;
  for (std::size_t k = 0; k < whole.targets.size(); ++k) {
    if (whole.target_steps[k] < first) continue;
    s.targets.push_back(whole.targets[k]);
    s.target_steps.push_back(whole.target_steps[k] - first);
    if (!whole.lane_mask.empty())
      s.lane_mask.insert(s.lane_mask.end(), whole.lane_mask.begin() + std::ptrdiff_t(k) * batch,
                         whole.lane_mask.begin() + std::ptrdiff_t(k + 1) * batch);
  }
  if (s.targets.empty())
    throw Error(fmt::format("gradcheck: task {}'s sequence ({} steps, its first target at step {}) has no target in "
                            "its last {}: unroll more steps",
                            task.name(), length, whole.target_steps.empty() ? -1 : whole.target_steps[0], steps));
  return s;
}

void perturb_parameters(Model& m, double sigma, std::uint64_t seed) {
  if (!m.built()) m.build();
  Rng rng(seed);
  for (auto& p : m.params())
    for (std::int64_t k = 0; k < p->value.numel(); ++k) p->value.set(k, p->value.get(k) + sigma * rng.normal());
}

namespace {
// The registered op `name` checked applied twice at the small size, once a process (the check is
// deterministic); unregistered (not checked) when no op of that name is in the registry.
OpTwiceCheck applied_twice_check(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, OpTwiceCheck> done;
  {
    std::lock_guard lock(mutex);
    if (auto it = done.find(name); it != done.end()) return it->second;
  }
  OpTwiceCheck k{name};
  if (const OpEntry* entry = find_op(name)) {
    k.registered = true;
    k.report = gradcheck_op(*entry, SampleSize::small, 1234, Uses::twice);
  }
  std::lock_guard lock(mutex);
  return done.emplace(name, std::move(k)).first->second;
}

// Every parameter's largest |dL/dθ| at the model's current point, one backward pass; L into `loss`, the op
// kinds on the tape (in order of first use) into `ops`.
std::vector<ParameterGradient> gradient_sizes(Model& m, const Sequence& seq, double& loss,
                                              std::vector<std::string>& ops) {
  m.params().zero_grad();
  Tape tape(m.params().dtype());
  Unroller u(m, tape);
  Var l = u.run(seq).loss;
  loss = l.item();
  for (std::uint32_t k = 0; k < tape.size(); ++k)
    if (const OpDef* op = tape.node(k).op; op && std::find(ops.begin(), ops.end(), op->name) == ops.end())
      ops.push_back(op->name);
  tape.backward(l);
  std::vector<ParameterGradient> sizes;
  for (const auto& p : m.params()) {
    double largest = 0;
    for (std::int64_t k = 0; k < p->grad.numel(); ++k) largest = std::max(largest, std::abs(p->grad.get(k)));
    sizes.push_back({p->name, largest, !(largest > kNegligibleGradient * std::abs(loss))});
  }
  m.params().zero_grad();
  return sizes;
}
}  // namespace

ModelGradcheckReport gradcheck_model(Model& m, const Sequence& seq, const ModelGradcheckOptions& o) {
  if (m.dtype() != DType::f64)
    throw Error(fmt::format("gradcheck: model {} holds {} parameters; gradcheck_model checks float64 ones (make the "
                            "model with DType::f64)", m.name(), name_of(m.dtype())));
  if (!o.gradcheck.check_parameters) throw Error("gradcheck_model: GradcheckOptions::check_parameters must be true");
  if (!m.built()) m.build();
  if (o.sigma != 0) perturb_parameters(m, o.sigma, o.seed);
  ModelGradcheckReport r;
  std::vector<std::string> ops;
  r.gradients = gradient_sizes(m, seq, r.loss, ops);
  for (const std::string& prefix : o.flat) {
    bool used = false;
    for (ParameterGradient& g : r.gradients)
      if (g.name.starts_with(prefix)) used = g.flat = true;
    if (!used) throw Error(fmt::format("gradcheck_model: no parameter of model {} starts with {}", m.name(), prefix));
  }
  std::vector<GradcheckInput> none;
  auto f = [&](Tape& tape, std::span<const Var>) {
    Unroller u(m, tape);
    return u.run(seq).loss;
  };
  static_cast<GradcheckReport&>(r) = gradcheck(f, none, &m.params(), o.gradcheck);
  if (o.require_gradient && !r.negligible().empty()) r.passed = false;
  for (const std::string& op : ops) {
    r.ops_applied_twice.push_back(applied_twice_check(op));
    if (r.ops_applied_twice.back().registered && !r.ops_applied_twice.back().report.passed) r.passed = false;
  }
  return r;
}

}  // namespace matmem
