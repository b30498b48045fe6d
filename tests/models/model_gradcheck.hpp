// Shared by the model tests: gradcheck a whole model, unrolled over a short random sequence, in float64.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"

namespace matmem::testing {

// A random sequence of `steps` frames [batch, in_rows, in_cols] with binary targets at every step after the first.
inline Sequence random_sequence(Model& m, std::int64_t batch, int steps, std::uint64_t seed) {
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

// Moves every parameter off its initial value by N(0, sigma²) noise: at initialisation some paths are all
// but closed (a zero initial state, a uniform memory that makes content addressing flat), so a gradient
// through them is tiny and a gradcheck of it would pass whatever the backward computed.
inline void perturb_parameters(Model& m, double sigma, std::uint64_t seed) {
  Rng rng(seed);
  for (auto& p : m.params())
    for (std::int64_t k = 0; k < p->value.numel(); ++k) p->value.set(k, p->value.get(k) + sigma * rng.normal());
}

// Every parameter's gradient of the loss, one backward pass: the largest |element| of each, by name.
inline std::vector<std::pair<std::string, double>> gradient_sizes(Model& m, const Sequence& seq, double& loss) {
  m.params().zero_grad();
  Tape tape(m.params().dtype());
  Unroller u(m, tape);
  Var l = u.run(seq).loss;
  loss = l.item();
  tape.backward(l);
  std::vector<std::pair<std::string, double>> sizes;
  for (const auto& p : m.params()) {
    double largest = 0;
    for (std::int64_t k = 0; k < p->grad.numel(); ++k) largest = std::max(largest, std::abs(p->grad.get(k)));
    sizes.emplace_back(p->name, largest);
  }
  m.params().zero_grad();
  return sizes;
}

// gradcheck passes a gradient of 1e-6 computed as 0 (within its atol of 1e-6), so a dropped gradient path
// that leaves a parameter's gradient that small would go unseen: every parameter must also have a gradient
// of at least this much of the loss (largest element), ten times gradcheck's atol for a loss near 1.
constexpr double kNegligibleGradient = 1e-5;

// The model gradchecked at a perturbed point, unrolled `steps` steps. `flat`: prefixes of parameter names
// whose gradient the caller knows to be negligible there (and says why); each must name a parameter.
inline GradcheckReport gradcheck_model(Model& m, int steps = 3, std::int64_t batch = 2,
                                       const std::vector<std::string>& flat = {}) {
  m.build();
  perturb_parameters(m, 0.3, 5);
  Sequence seq = random_sequence(m, batch, steps, 99);
  double loss = 0;
  std::vector<int> flat_used(flat.size(), 0);
  for (const auto& [name, largest] : gradient_sizes(m, seq, loss)) {
    bool known_flat = false;
    for (std::size_t k = 0; k < flat.size(); ++k)
      if (name.compare(0, flat[k].size(), flat[k]) == 0) known_flat = flat_used[k] = 1;
    if (known_flat) continue;
    INFO("parameter " << name << ": largest |dL/dθ| " << largest << " for loss " << loss);
    CHECK(largest > kNegligibleGradient * std::abs(loss));
  }
  for (std::size_t k = 0; k < flat.size(); ++k) {
    INFO("no parameter starts with " << flat[k]);
    CHECK(flat_used[k]);
  }
  std::vector<GradcheckInput> none;
  auto f = [&](Tape& tape, std::span<const Var>) {
    Unroller u(m, tape);
    return u.run(seq).loss;
  };
  return gradcheck(f, none, &m.params());
}

}  // namespace matmem::testing
