// RMSprop with PyTorch's semantics (torch.optim.RMSprop, 1.13), the NTM's usual optimiser (spec/models.md):
//   g ← g + λ p                         (weight decay λ, default 0)
//   v ← α v + (1 − α) g²
//   centered:  m ← α m + (1 − α) g,  d = √(v − m²) + ε;  otherwise d = √v + ε
//   μ > 0:     b ← μ b + g / d,  p ← p − lr b;           otherwise p ← p − lr g / d
// Defaults: lr 1e-4, α 0.95, μ 0.9, ε 1e-8 (spec/models.md; the paper uses lr 1e-4). Note ε is added
// outside the square root, as PyTorch does (TensorFlow's RMSprop adds it inside).
// State (v, m, b) is keyed by parameter name.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "autodiff/parameters.hpp"

namespace matmem {

struct RMSpropOptions {
  double lr = 1e-4;
  double alpha = 0.95;
  double momentum = 0.9;
  double eps = 1e-8;
  double weight_decay = 0;
  bool centered = false;
};

class RMSprop {
 public:
  RMSprop(ParameterStore& params, RMSpropOptions options = {});
  void step();  // one update from the gradients in params
  const RMSpropOptions& options() const { return options_; }

  struct State {
    Tensor square_avg, grad_avg, momentum_buffer;
  };
  std::map<std::string, State>& state() { return state_; }

 private:
  ParameterStore& params_;
  RMSpropOptions options_;
  std::map<std::string, State> state_;
  std::vector<std::pair<Parameter*, State*>> slots_;  // resolved by name once
};

}  // namespace matmem
