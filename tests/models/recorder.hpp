// A model's exposed values (Step::expose), kept by name and time step, for tests by value.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "matmem/autodiff/tape.hpp"
#include "matmem/models/core/model.hpp"

namespace matmem::testing {

// Keeps every exposed tensor by name and time step.
class Recorder : public StepObserver {
 public:
  void observe(std::int64_t t, std::string_view name, const Var& value) override {
    std::vector<Tensor>& steps = seen[std::string(name)];
    if (std::int64_t(steps.size()) <= t) steps.resize(std::size_t(t + 1));
    steps[std::size_t(t)] = value.value_copy();
  }
  std::map<std::string, std::vector<Tensor>> seen;
};

// Runs `m` over `seq` on a float64 tape without gradients, keeping every exposed tensor.
inline Recorder run_recorded(Model& m, const Sequence& seq) {
  Tape tape(DType::f64);
  NoGrad no_grad(tape);
  Unroller u(m, tape);
  Recorder rec;
  u.set_observer(&rec);
  u.run(seq);
  return rec;
}

}  // namespace matmem::testing
