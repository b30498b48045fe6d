#include "matmem/models/tasks/delayed_recall.hpp"

#include <cstring>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

DelayedRecallTask::DelayedRecallTask(DelayedRecallOptions o) : o_(o) {
  if (o.rows < 1 || o.cols < 1)
    throw Error(fmt::format("delay task: rows and cols must be ≥ 1 (got {}×{})", o.rows, o.cols));
  if (o.delay < 1) throw Error(fmt::format("delay task: the delay must be ≥ 1 step (got {})", o.delay));
  if (o.min_length < 1 || o.min_length > o.max_length)
    throw Error(fmt::format("delay task: need 1 ≤ min_length ≤ max_length (got {}..{})", o.min_length, o.max_length));
  if (o.batch < 1) throw Error(fmt::format("delay task: batch must be ≥ 1 (got {})", o.batch));
}

void DelayedRecallTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, rng.uniform_int(o_.min_length, o_.max_length), out, dtype);
}

void DelayedRecallTask::sample_size_into(Rng& rng, std::int64_t l, Sequence& s, DType dtype) const {
  const Shape frame = matrices(o_.batch, o_.rows, o_.cols);
  const std::int64_t d = o_.delay;
  s.reset();
  // Bits drawn in each frame's physical order, frame after frame: a seed gives the same frames whichever
  // buffers are reused.
  for (std::int64_t t = 0; t < d + l; ++t) {
    Tensor& x = s.add_input(dtype, frame);
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, double(rng.coin()));
  }
  for (std::int64_t t = d; t < d + l; ++t) {
    Tensor& y = s.add_target(dtype, frame, t);
    std::memcpy(y.raw(), s.inputs[std::size_t(t - d)].raw(), y.bytes());
  }
}

}  // namespace matmem
