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

bool BestParameters::update(const Model& model, double validation_loss, std::int64_t step) {
  const std::int64_t before = stop_.best_step();
  const bool stop = stop_.record(step, validation_loss);
  if (stop_.best_step() != before) {
    best_.clear();
    for (const auto& p : model.params()) best_.push_back(p->value);
  }
  return stop;
}

void BestParameters::restore(Model& model) const {
  if (best_.empty()) return;
  std::size_t k = 0;
  for (auto& p : model.params()) {  // in place: the parameter keeps its buffer
    const Tensor& b = best_[k++];
    std::memcpy(p->value.raw(), b.raw(), std::size_t(b.numel()) * size_of(b.dtype()));
  }
}

}  // namespace matmem
