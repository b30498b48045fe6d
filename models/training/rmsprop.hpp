// RMSprop with PyTorch's semantics (torch.optim.RMSprop, 1.13), the NTM's usual optimiser (spec/models.md):
//   g ← g + λ p                         (weight decay λ, default 0)
//   v ← α v + (1 − α) g²
//   centered:  m ← α m + (1 − α) g,  d = √(v − m²) + ε;  otherwise d = √v + ε
//   eps_inside: d = √(v − m² + ε) (centered), √(v + ε) (otherwise)
//   μ > 0:     b ← μ b + g / d,  p ← p − lr b;           otherwise p ← p − lr g / d
// Defaults: lr 1e-4, α 0.95, μ 0.9, ε 1e-8 (spec/models.md; the paper uses lr 1e-4). ε is added outside
// the square root, as PyTorch does, unless eps_inside (TensorFlow's RMSprop and Graves 2013 add it inside).
// Graves et al. 2014's optimiser is Graves 2013's (eq. 38–41; spec/graves_ntm.md §1):
//   n ← ℵ n + (1 − ℵ) g²,  ḡ ← ℵ ḡ + (1 − ℵ) g,  Δ ← ℶ Δ − η g / √(n − ḡ² + ε),  θ ← θ + Δ
// with ℵ = 0.95, ℶ = 0.9, ε = 1e-4: centered, eps_inside, α = ℵ, μ = ℶ, eps = ε. Its Δ is −lr b here while the
// learning rate is constant; when a schedule changes it, Δ keeps the past rates' steps where b is scaled by
// the new one.
// State per parameter p: p/square_avg, p/grad_avg (centered), p/momentum_buffer (μ > 0).
#pragma once
#include <vector>

#include "matmem/models/training/optimizer.hpp"

namespace matmem {

struct RMSpropOptions {
  double lr = 1e-4;
  double alpha = 0.95;
  double momentum = 0.9;
  double eps = 1e-8;
  double weight_decay = 0;
  bool centered = false;
  bool eps_inside = false;  // ε inside the square root (Graves 2013), else added to it (PyTorch)
};

class RMSprop : public Optimizer {
 public:
  RMSprop(ParameterStore& params, RMSpropOptions options = {}, UpdateMode mode = UpdateMode::whole);
  const char* name() const override { return "rmsprop"; }
  const RMSpropOptions& options() const { return options_; }

 private:
  bool compute_update() override;
  // A parameter's state, and the buffers its next values (the parameter's and the state's) go to (empty in
  // place).
  struct State {
    Parameter* param;
    Tensor square_avg, grad_avg, momentum_buffer;
    Tensor value_next, square_avg_next, grad_avg_next, momentum_buffer_next;
  };
  RMSpropOptions options_;
  std::vector<State> state_;
};

}  // namespace matmem
