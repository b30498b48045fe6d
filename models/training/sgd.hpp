// SGD with momentum (models/training/optimizer.hpp).
#pragma once
#include <vector>

#include "matmem/models/training/optimizer.hpp"

namespace matmem {

// SGD with momentum, PyTorch's semantics (torch.optim.SGD, dampening 0, not Nesterov):
//   g ← g + λ p;  μ > 0: b ← μ b + g (b starts at 0, so the first b is g), p ← p − lr b;  else p ← p − lr g.
// State per parameter p: p/momentum_buffer.
struct SGDOptions {
  double lr = 1e-2, momentum = 0.9, weight_decay = 0;
};

class SGD : public Optimizer {
 public:
  SGD(ParameterStore& params, SGDOptions options = {}, UpdateMode mode = UpdateMode::whole);
  const char* name() const override { return "sgd"; }

 private:
  bool compute_update() override;
  struct State {  // a parameter's state, and the buffers its next values go to (empty in place)
    Parameter* param;
    Tensor momentum_buffer;
    Tensor value_next, momentum_buffer_next;
  };
  SGDOptions options_;
  std::vector<State> state_;
};

}  // namespace matmem
