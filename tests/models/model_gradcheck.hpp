// Shared by the model tests: gradcheck a whole model, unrolled over a short random sequence, in float64.
#pragma once
#include <catch2/catch.hpp>

#include "autodiff/gradcheck.hpp"
#include "models/core/model.hpp"
#include "models/tasks/tasks.hpp"

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

inline GradcheckReport gradcheck_model(Model& m, int steps = 3, std::int64_t batch = 2) {
  m.build();
  Sequence seq = random_sequence(m, batch, steps, 99);
  std::vector<GradcheckInput> none;
  auto f = [&](Tape& tape, std::span<const Var>) {
    Unroller u(m, tape);
    return u.run(seq).loss;
  };
  return gradcheck(f, none, &m.params());
}

}  // namespace matmem::testing
