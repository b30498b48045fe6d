// FlatFrames: a task's sequences with every input frame and target one row, `task.flatten` for the generated
// tasks: a frame X [r,c] becomes x [1, r·c], x_{i·c + j} = X_{ij}, so a vector model's map of it, x V, gives each
// of its elements a row of V of its own. Unflattened, a vector model (rows 1) reads an r-row frame through
// U [r,1] and one V: every row of the frame (Graves' copy: the bits and the delimiter channel; repeat copy: the
// repeat count too) through the same V, and writes an r-row target as r scaled copies of one row of logits,
// where Graves' NTM has a weight per input channel and per output. Flattened, the task is his.
// The loss and every cost are the same sums over the same elements. Targets that are softmax groups per row
// (TargetKind::classes) would change their groups: refused.
#pragma once
#include <memory>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

class FlatFrames final : public Task {
 public:
  /// Throws for a task whose targets are softmax rows (classes) or whose frames are drawn from data
  /// (a SplitTask: fashion_mnist flattens its own images with the same key).
  explicit FlatFrames(std::unique_ptr<Task> inner);
  const Task& inner() const { return *inner_; }  ///< the task whose frames are flattened

  const char* name() const override { return inner_->name(); }
  void sample_into(Rng& rng, Sequence& out, DType dtype) const override;
  void sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype) const override;
  void sample_step_into(std::int64_t step, Rng& rng, Sequence& out, DType dtype) const override;
  const char* size_name() const override { return inner_->size_name(); }
  std::pair<std::int64_t, std::int64_t> size_range() const override { return inner_->size_range(); }
  std::int64_t longest_steps() const override { return inner_->longest_steps(); }
  MemoryProbes memory_probes() const override { return inner_->memory_probes(); }
  std::vector<std::int64_t> eval_sizes() const override { return inner_->eval_sizes(); }
  std::int64_t input_rows() const override { return 1; }
  std::int64_t input_cols() const override { return inner_->input_rows() * inner_->input_cols(); }
  std::int64_t output_rows() const override { return 1; }
  std::int64_t output_cols() const override { return inner_->output_rows() * inner_->output_cols(); }
  std::int64_t batch() const override { return inner_->batch(); }
  TargetKind target_kind() const override { return inner_->target_kind(); }

 private:
  void flatten(Sequence& drawn, Sequence& out, DType dtype) const;
  std::unique_ptr<Task> inner_;
};

}  // namespace matmem
