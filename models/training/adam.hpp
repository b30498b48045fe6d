// Adam with PyTorch's semantics (torch.optim.Adam, 1.13; Kingma & Ba 2015), at step t = 1, 2, …:
//   g ← g + λ p
//   m ← β₁ m + (1 − β₁) g,   v ← β₂ v + (1 − β₂) g²
//   p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)
// Defaults: lr 1e-3, β₁ 0.9, β₂ 0.999, ε 1e-8. State per parameter p: p/exp_avg, p/exp_avg_sq; t is steps().
#pragma once
#include <vector>

#include "matmem/models/training/optimizer.hpp"

namespace matmem {

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
};

class Adam : public Optimizer {
 public:
  Adam(ParameterStore& params, AdamOptions options = {}, UpdateMode mode = UpdateMode::whole);
  const char* name() const override { return "adam"; }

 private:
  bool compute_update() override;
  struct State {  // a parameter's state, and the buffers its next values go to (empty in place)
    Parameter* param;
    Tensor exp_avg, exp_avg_sq;
    Tensor value_next, exp_avg_next, exp_avg_sq_next;
  };
  AdamOptions options_;
  std::vector<State> state_;
};

}  // namespace matmem
