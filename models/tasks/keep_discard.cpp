#include "matmem/models/tasks/keep_discard.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "matmem/models/tasks/frames.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

KeepDiscardTask::KeepDiscardTask(KeepDiscardOptions o) : o_(o) {
  auto refuse = [](const std::string& why) { throw Error("keep_discard task: " + why); };
  if (o_.rows < 1) refuse(fmt::format("task.rows = {} must be ≥ 1", o_.rows));
  if (o_.cols < 1) refuse(fmt::format("task.cols = {} must be ≥ 1", o_.cols));
  if (o_.min_subsequences < 1)
    refuse(fmt::format("task.min_subsequences = {} must be ≥ 1", o_.min_subsequences));
  if (o_.max_subsequences < o_.min_subsequences)
    refuse(fmt::format("task.max_subsequences = {} must be ≥ task.min_subsequences = {}", o_.max_subsequences,
                       o_.min_subsequences));
  if (o_.keep < 1) refuse(fmt::format("task.keep = {} must be ≥ 1", o_.keep));
  if (o_.keep > o_.min_subsequences)
    refuse(fmt::format("task.keep = {} must be ≤ task.min_subsequences = {} (every sequence has that many keep "
                       "sub-sequences)", o_.keep, o_.min_subsequences));
  auto lengths = [&](const char* kind, std::int64_t lo, std::int64_t hi) {
    if (lo < 1) refuse(fmt::format("task.min_{}_length = {} must be ≥ 1", kind, lo));
    if (hi < lo) refuse(fmt::format("task.max_{0}_length = {1} must be ≥ task.min_{0}_length = {2}", kind, hi, lo));
  };
  lengths("keep", o_.min_keep_length, o_.max_keep_length);
  lengths("discard", o_.min_discard_length, o_.max_discard_length);
  if (o_.batch < 1) refuse(fmt::format("batch = {} must be ≥ 1", o_.batch));
}

void KeepDiscardTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, rng.uniform_int(o_.min_subsequences, o_.max_subsequences), out, dtype);
}

void KeepDiscardTask::sample_size_into(Rng& rng, std::int64_t n, Sequence& out, DType dtype) const {
  if (n < 1) throw Error(fmt::format("keep_discard task: {} sub-sequences: a sequence needs at least 1", n));
  // Draw order: the keep sub-sequences, the lengths, then the matrices sub-sequence by sub-sequence, each
  // [B,r,c] bit by bit in its physical order.
  const std::int64_t keep = std::min(o_.keep, n);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const std::int64_t fixed = o_.keep_first ? 1 : 0;  // the first is keep without a draw
  for (std::int64_t k = fixed; k < keep; ++k)         // a partial Fisher–Yates shuffle of positions fixed..n−1
    std::swap(order[std::size_t(k)], order[std::size_t(rng.uniform_int(k, n - 1))]);
  std::vector<bool> is_keep(static_cast<std::size_t>(n), false);
  for (std::int64_t k = 0; k < keep; ++k) is_keep[std::size_t(order[std::size_t(k)])] = true;
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j)
    lengths[std::size_t(j)] = is_keep[std::size_t(j)] ? rng.uniform_int(o_.min_keep_length, o_.max_keep_length)
                                                      : rng.uniform_int(o_.min_discard_length, o_.max_discard_length);
  std::vector<std::vector<Tensor>> x(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t t = 0; t < lengths[std::size_t(j)]; ++t) {
      Tensor m(dtype, matrices(o_.batch, o_.rows, o_.cols));
      for (std::int64_t e = 0; e < m.numel(); ++e) m.set(e, double(rng.coin()));
      x[std::size_t(j)].push_back(std::move(m));
    }
  write(x, is_keep, out, dtype);
}

void KeepDiscardTask::write(const std::vector<std::vector<Tensor>>& x, const std::vector<bool>& keep, Sequence& s,
                            DType dtype) const {
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols;
  if (x.empty() || x.size() != keep.size())
    throw Error(fmt::format("keep_discard task: {} sub-sequences and {} keep flags (need as many, at least 1)",
                            x.size(), keep.size()));
  for (const std::vector<Tensor>& sub : x) {
    if (sub.empty()) throw Error("keep_discard task: a sub-sequence of no matrices");
    for (const Tensor& m : sub)
      if (m.shape() != matrices(B, r, c))
        throw ShapeError(fmt::format("keep_discard task: a matrix {} for matrices {}", m.shape().str(),
                                     matrices(B, r, c).str()));
  }
  const Shape in = matrices(B, r + 3, c), target = matrices(B, r, c);
  s.reset();
  s.kind = TargetKind::bits;
  std::int64_t t = 0;  // the next input frame's step
  auto recall = [&](const std::vector<Tensor>& sub) {
    for (const Tensor& m : sub) {
      s.add_input(dtype, in);
      frames::put(s.add_target(dtype, target, t++), m);
    }
  };
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double flag = keep[j] ? 1.0 : 0.0;
    for (const Tensor& m : x[j]) {
      Tensor& f = s.add_input(dtype, in);
      frames::put(f, m);
      frames::set_row(f, r, flag);
      ++t;
    }
    Tensor& delimiter = s.add_input(dtype, in);
    frames::set_row(delimiter, r, flag);
    frames::set_row(delimiter, r + 1, 1.0);
    ++t;
    if (!keep[j]) recall(x[j]);
  }
  frames::set_row(s.add_input(dtype, in), r + 2, 1.0);
  ++t;
  for (std::size_t j = 0; j < x.size(); ++j)
    if (keep[j]) recall(x[j]);
}

}  // namespace matmem
