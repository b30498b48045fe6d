#include "matmem/models/training/evaluation.hpp"

#include <algorithm>

#include "matmem/ops/batch_norm.hpp"

namespace matmem {

SplitResult evaluate_batches(Model& model, Tape& tape,
                             const std::function<const Sequence*(Sequence& seq, std::int64_t& count)>& next) {
  SplitResult r;
  Unroller unroller(model, tape);
  NoGrad no_grad(tape);
  BatchNormScope eval({BatchNormMode::running});
  Sequence seq;  // outlives each run: the tape points into its frames
  std::int64_t count = 0;
  while (const Sequence* batch = next(seq, count)) {
    const SequenceResult& s = unroller.run(*batch);
    r.loss += s.loss.item() * double(count);
    r.error += s.bits * double(count);
    r.count += count;
  }
  if (r.count == 0) return r;
  r.loss /= double(r.count);
  r.error /= double(r.count);
  return r;
}

SplitResult evaluate_split(Model& model, Tape& tape, const SplitTask& task, Split split, std::int64_t batch) {
  const std::int64_t n = task.split_size(split);
  std::int64_t first = 0;
  return evaluate_batches(model, tape, [&](Sequence& seq, std::int64_t& count) -> const Sequence* {
    if (first >= n) return nullptr;
    count = std::min(batch, n - first);
    task.split_batch_into(split, first, count, seq, model.dtype());
    first += count;
    return &seq;
  });
}

}  // namespace matmem
