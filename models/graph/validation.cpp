#include "models/graph/validation.hpp"

#include <cstring>

namespace matmem {

SplitScore evaluate_split(Model& model, Tape& tape, const GraphTask& task, std::int64_t split, Sequence& seq) {
  Rng unused(0);  // the evaluation splits draw nothing
  task.sample_size_into(unused, split, seq, model.dtype());
  NoGrad no_grad(tape);
  Unroller u(model, tape);
  const SequenceResult& r = u.run(seq);
  return {r.loss.item(), 1.0 - r.bits};  // bits: the error rate over the split's nodes
}

bool EarlyStopping::update(const Model& model, double validation_loss, std::int64_t step) {
  if (best_step_ < 0 || validation_loss < best_loss_) {
    best_loss_ = validation_loss, best_step_ = step;
    best_.clear();
    for (const auto& p : model.params()) best_.push_back(p->value);
    return false;
  }
  return patience_ > 0 && step - best_step_ >= patience_;
}

void EarlyStopping::restore(Model& model) const {
  if (best_.empty()) return;
  std::size_t k = 0;
  for (auto& p : model.params()) {  // in place: the parameter keeps its buffer
    const Tensor& b = best_[k++];
    std::memcpy(p->value.raw(), b.raw(), std::size_t(b.numel()) * size_of(b.dtype()));
  }
}

}  // namespace matmem
