#include "matmem/models/tasks/flat_frames.hpp"

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
// [B,r,c] -> [B,1,r·c]: in the batch-interleaved layout (runtime/shape.hpp) row i of sample b is the c values at
// (i·B + b)·c, and the flat frame's one row of sample b the r·c values at b·r·c.
void flat_copy(const Tensor& from, Tensor& to) {
  const Shape& s = from.shape();
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < s.rows; ++i)
      for (std::int64_t j = 0; j < s.cols; ++j) to.set((b * s.rows + i) * s.cols + j, from.get((i * s.batch + b) * s.cols + j));
}
// The sequence the inner task draws into, per thread, its buffers reused.
Sequence& drawn() {
  thread_local Sequence s;
  return s;
}
}  // namespace

FlatFrames::FlatFrames(std::unique_ptr<Task> inner) : inner_(std::move(inner)) {
  if (inner_->target_kind() == TargetKind::classes)
    throw Error(fmt::format("task.flatten: task {} has class targets, a softmax over each row; flattening would "
                            "merge the rows' groups",
                            inner_->name()));
  if (dynamic_cast<const SplitTask*>(inner_.get()))
    throw Error(fmt::format("task.flatten: task {} reads its frames from data; it flattens for the generated tasks "
                            "and fashion_mnist",
                            inner_->name()));
}

void FlatFrames::flatten(Sequence& d, Sequence& out, DType dtype) const {
  out.reset();
  out.kind = d.kind;
  for (const Tensor& x : d.inputs) {
    const Shape& s = x.shape();
    flat_copy(x, out.add_input(dtype, matrices(s.batch, 1, s.rows * s.cols)));
  }
  for (std::size_t k = 0; k < d.targets.size(); ++k) {
    const Shape& s = d.targets[k].shape();
    flat_copy(d.targets[k], out.add_target(dtype, matrices(s.batch, 1, s.rows * s.cols), d.target_steps[k]));
  }
  out.lane_mask = d.lane_mask;
  out.optimal_cost = d.optimal_cost;
  out.graph = d.graph;
}

void FlatFrames::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  Sequence& d = drawn();
  inner_->sample_into(rng, d, dtype);
  flatten(d, out, dtype);
}

void FlatFrames::sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype) const {
  Sequence& d = drawn();
  inner_->sample_size_into(rng, size, d, dtype);
  flatten(d, out, dtype);
}

void FlatFrames::sample_step_into(std::int64_t step, Rng& rng, Sequence& out, DType dtype) const {
  Sequence& d = drawn();
  inner_->sample_step_into(step, rng, d, dtype);
  flatten(d, out, dtype);
}

}  // namespace matmem
