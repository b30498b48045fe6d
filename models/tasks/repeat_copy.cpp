#include "matmem/models/tasks/repeat_copy.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/models/tasks/frames.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

RepeatCopyTask::RepeatCopyTask(RepeatCopyOptions o) : o_(std::move(o)) {
  if (o_.rows < 1 || o_.cols < 1)
    throw Error(fmt::format("repeat_copy task: rows and cols must be ≥ 1 (got {}×{})", o_.rows, o_.cols));
  if (o_.min_length < 1 || o_.min_length > o_.max_length)
    throw Error(fmt::format("repeat_copy task: need 1 ≤ min_length ≤ max_length (got {}..{})", o_.min_length,
                            o_.max_length));
  if (o_.min_repeats < 1 || o_.min_repeats > o_.max_repeats)
    throw Error(fmt::format("repeat_copy task: need 1 ≤ min_repeats ≤ max_repeats (got {}..{})", o_.min_repeats,
                            o_.max_repeats));
  if (o_.size_by != "length" && o_.size_by != "repeats")
    throw Error(fmt::format("repeat_copy task: size_by must be length or repeats (got {})", o_.size_by));
  if (o_.fixed_size < 0) throw Error(fmt::format("repeat_copy task: fixed_size must be ≥ 0 (got {})", o_.fixed_size));
  if (o_.batch < 1) throw Error(fmt::format("repeat_copy task: batch must be ≥ 1 (got {})", o_.batch));
}

double RepeatCopyTask::normalised_repeats(std::int64_t n) const {
  const double mean = 0.5 * double(o_.min_repeats + o_.max_repeats);
  const double k = double(o_.max_repeats - o_.min_repeats + 1);
  const double var = (k * k - 1) / 12;
  return (double(n) - mean) / (var > 0 ? std::sqrt(var) : 1.0);
}

std::pair<std::int64_t, std::int64_t> RepeatCopyTask::size_range() const {
  return o_.size_by == "repeats" ? std::pair{o_.min_repeats, o_.max_repeats} : std::pair{o_.min_length, o_.max_length};
}

void RepeatCopyTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  const std::int64_t l = rng.uniform_int(o_.min_length, o_.max_length);
  const std::int64_t n = rng.uniform_int(o_.min_repeats, o_.max_repeats);
  sample_length_repeats(rng, l, n, out, dtype);
}

void RepeatCopyTask::sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype) const {
  const bool by_length = o_.size_by == "length";
  const std::int64_t other = o_.fixed_size > 0 ? o_.fixed_size
                             : by_length       ? rng.uniform_int(o_.min_repeats, o_.max_repeats)
                                               : rng.uniform_int(o_.min_length, o_.max_length);
  sample_length_repeats(rng, by_length ? size : other, by_length ? other : size, out, dtype);
}

void RepeatCopyTask::sample_length_repeats(Rng& rng, std::int64_t l, std::int64_t n, Sequence& out,
                                           DType dtype) const {
  if (l < 1 || n < 1) throw Error(fmt::format("repeat_copy task: length {} and repeats {} must be ≥ 1", l, n));
  // The matrices are drawn bit by bit in their physical order, one after the other, then laid out by write().
  std::vector<Tensor> x;
  x.reserve(std::size_t(l));
  for (std::int64_t t = 0; t < l; ++t) {
    Tensor m(dtype, matrices(o_.batch, o_.rows, o_.cols));
    for (std::int64_t k = 0; k < m.numel(); ++k) m.set(k, double(rng.coin()));
    x.push_back(std::move(m));
  }
  write(x, n, out, dtype);
}

void RepeatCopyTask::write(const std::vector<Tensor>& x, std::int64_t n, Sequence& s, DType dtype) const {
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols, l = std::int64_t(x.size());
  if (l < 1 || n < 1) throw Error(fmt::format("repeat_copy task: length {} and repeats {} must be ≥ 1", l, n));
  const Shape in = matrices(B, r + 2, c), target = matrices(B, r + 1, c);
  for (const Tensor& m : x)
    if (m.shape() != matrices(B, r, c))
      throw ShapeError(fmt::format("repeat_copy task: a matrix {} for matrices {}", m.shape().str(), matrices(B, r, c).str()));
  s.reset();
  for (std::int64_t t = 0; t < l; ++t) frames::put(s.add_input(dtype, in), x[std::size_t(t)]);
  Tensor& delimiter = s.add_input(dtype, in);
  frames::set_row(delimiter, r, 1.0);
  frames::set_row(delimiter, r + 1, normalised_repeats(n));
  for (std::int64_t k = 0; k < n * l; ++k) {
    s.add_input(dtype, in);
    frames::put(s.add_target(dtype, target, l + 1 + k), x[std::size_t(k % l)]);
  }
  s.add_input(dtype, in);
  frames::set_row(s.add_target(dtype, target, l + 1 + n * l), r, 1.0);
}

}  // namespace matmem
