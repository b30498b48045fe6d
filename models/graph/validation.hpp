// Node classification's held-out splits while training on a graph task (models/tasks/graph.hpp), and early
// stopping on the validation loss as 001 §4.4 uses it (stop once 10 epochs brought no better validation
// loss). One training step of the graph task is one epoch: the whole training split in one batch.
//
// evaluate_split runs the model on a split (every neighbour read, no gradient) and gives the split's mean
// cross-entropy over its labelled nodes and its accuracy. BestParameters keeps a copy of the parameters at the
// lowest validation loss seen, says when `patience` steps in a row brought none lower (the trainer's
// EarlyStopping rule, models/training/early_stopping.hpp), and puts the best parameters back. Its state is
// not in the checkpoint: a resumed run starts its patience afresh.
#pragma once
#include <cstdint>
#include <vector>

#include "models/core/model.hpp"
#include "models/tasks/graph.hpp"
#include "models/training/early_stopping.hpp"

namespace matmem {

struct SplitScore {
  double loss = 0, accuracy = 0;
};

// `seq` is reused between calls (the tape points into its frames until the next run).
SplitScore evaluate_split(Model& model, Tape& tape, const GraphTask& task, std::int64_t split, Sequence& seq);

// The parameters at the lowest validation loss seen, and when to stop: EarlyStopping's rule (a loss strictly
// below the best so far is the new best; stop once `patience` evaluations in a row brought none; 0: never).
class BestParameters {
 public:
  explicit BestParameters(std::int64_t patience) : stop_(patience) {}
  // Records the validation loss after training step `step` (copying the parameters when it is the best);
  // true when the run should stop.
  bool update(const Model& model, double validation_loss, std::int64_t step);
  void restore(Model& model) const;  // the best parameters, if any were recorded
  std::int64_t best_step() const { return stop_.best_step(); }
  double best_loss() const { return stop_.best(); }

 private:
  EarlyStopping stop_;
  std::vector<Tensor> best_;
};

}  // namespace matmem
