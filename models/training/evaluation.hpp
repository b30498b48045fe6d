/// @file
/// A model's loss and cost over held-out data, without gradients, batch normalisation on its running
/// statistics: a SplitTask's validation or test part (evaluate_split), or any batches (evaluate_batches). The
/// Trainer evaluates so every eval.interval steps and tells its rules the result.
#pragma once
#include <cstdint>
#include <functional>

#include "matmem/autodiff/tape.hpp"
#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

/// A model's loss and cost over a whole part of a SplitTask's data, in batches of `batch` (the last one smaller),
/// without gradients: the mean loss per example, and the errors per example (for TargetKind::classes with one
/// target row, the error rate; accuracy = 1 − error).
struct SplitResult {
  double loss = 0, error = 0;  ///< mean loss and errors per example
  std::int64_t count = 0;      ///< examples evaluated
};
/// Evaluates `model` on part `split` of `task` (see SplitResult), on `tape`.
SplitResult evaluate_split(Model& model, Tape& tape, const SplitTask& task, Split split, std::int64_t batch);

/// The mean loss and cost per example of `model` over batches, on `tape`: next(seq, count) gives the next
/// batch (filling `seq` or another) and its examples, and nullptr after the last.
SplitResult evaluate_batches(Model& model, Tape& tape,
                             const std::function<const Sequence*(Sequence& seq, std::int64_t& count)>& next);

}  // namespace matmem
