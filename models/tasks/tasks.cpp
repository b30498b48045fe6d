#include "models/tasks/tasks.hpp"

#include <fmt/format.h>

#include "runtime/error.hpp"

namespace matmem {
namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}
// A fresh [B, rows, c] frame of zeros.
Tensor frame(DType t, std::int64_t b, std::int64_t rows, std::int64_t c) { return Tensor(t, matrices(b, rows, c)); }
void set_row(Tensor& f, std::int64_t row, double v) {
  for (std::int64_t b = 0; b < f.shape().batch; ++b)
    for (std::int64_t j = 0; j < f.shape().cols; ++j) f.set(f.shape().offset(b, 0, row, j), v);
}
// Copies matrix m [B,r,c] into the first r rows of frame f [B,r+extra,c].
void put(Tensor& f, const Tensor& m) {
  for (std::int64_t b = 0; b < m.shape().batch; ++b)
    for (std::int64_t i = 0; i < m.shape().rows; ++i)
      for (std::int64_t j = 0; j < m.shape().cols; ++j) f.set(f.shape().offset(b, 0, i, j), m.at(b, i, j));
}
Tensor random_bits(Rng& rng, DType t, std::int64_t b, std::int64_t r, std::int64_t c) {
  Tensor m(t, matrices(b, r, c));
  for (std::int64_t k = 0; k < m.numel(); ++k) m.set(k, rng.bernoulli(0.5) ? 1.0 : 0.0);
  return m;
}
}  // namespace

CopyTask::CopyTask(CopyTaskOptions o) : o_(o) {
  require(o.rows >= 1 && o.cols >= 1, fmt::format("copy task: rows and cols must be ≥ 1 (got {}×{})", o.rows, o.cols));
  require(o.min_length >= 1 && o.min_length <= o.max_length,
          fmt::format("copy task: need 1 ≤ min_length ≤ max_length (got {}..{})", o.min_length, o.max_length));
  require(o.batch >= 1, fmt::format("copy task: batch must be ≥ 1 (got {})", o.batch));
}

Sequence CopyTask::sample(Rng& rng, DType dtype) const {
  return sample_length(rng, rng.uniform_int(o_.min_length, o_.max_length), dtype);
}

Sequence CopyTask::sample_length(Rng& rng, std::int64_t l, DType dtype) const {
  Sequence s;
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols;
  std::vector<Tensor> xs;
  for (std::int64_t t = 0; t < l; ++t) {
    xs.push_back(random_bits(rng, dtype, B, r, c));
    Tensor f = frame(dtype, B, r + 1, c);
    put(f, xs.back());
    s.inputs.push_back(std::move(f));
  }
  Tensor delim = frame(dtype, B, r + 1, c);
  set_row(delim, r, 1.0);
  s.inputs.push_back(std::move(delim));
  for (std::int64_t t = 0; t < l; ++t) {
    s.inputs.push_back(frame(dtype, B, r + 1, c));
    s.targets.push_back(xs[t]);
    s.target_steps.push_back(l + 1 + t);
  }
  return s;
}

RecallTask::RecallTask(RecallTaskOptions o) : o_(o) {
  require(o.rows >= 1 && o.cols >= 1, fmt::format("recall task: rows and cols must be ≥ 1 (got {}×{})", o.rows, o.cols));
  require(o.min_items >= 2 && o.min_items <= o.max_items,
          fmt::format("recall task: need 2 ≤ min_items ≤ max_items (got {}..{})", o.min_items, o.max_items));
  require(o.item_matrices >= 1, "recall task: item_matrices must be ≥ 1");
  require(o.batch >= 1, fmt::format("recall task: batch must be ≥ 1 (got {})", o.batch));
}

Sequence RecallTask::sample(Rng& rng, DType dtype) const {
  return sample_items(rng, rng.uniform_int(o_.min_items, o_.max_items), dtype);
}

Sequence RecallTask::sample_items(Rng& rng, std::int64_t k, DType dtype) const {
  Sequence s;
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols, n = o_.item_matrices;
  std::vector<std::vector<Tensor>> items(k);
  for (std::int64_t it = 0; it < k; ++it) {
    Tensor d = frame(dtype, B, r + 2, c);
    set_row(d, r, 1.0);
    s.inputs.push_back(std::move(d));
    for (std::int64_t m = 0; m < n; ++m) {
      items[it].push_back(random_bits(rng, dtype, B, r, c));
      Tensor f = frame(dtype, B, r + 2, c);
      put(f, items[it].back());
      s.inputs.push_back(std::move(f));
    }
  }
  const std::int64_t q = rng.uniform_int(std::int64_t(0), k - 2);  // item q+1 (1-based) is queried
  auto query_delim = [&] {
    Tensor d = frame(dtype, B, r + 2, c);
    set_row(d, r + 1, 1.0);
    s.inputs.push_back(std::move(d));
  };
  query_delim();
  for (std::int64_t m = 0; m < n; ++m) {
    Tensor f = frame(dtype, B, r + 2, c);
    put(f, items[q][m]);
    s.inputs.push_back(std::move(f));
  }
  query_delim();
  for (std::int64_t m = 0; m < n; ++m) {
    s.target_steps.push_back(std::int64_t(s.inputs.size()));
    s.inputs.push_back(frame(dtype, B, r + 2, c));
    s.targets.push_back(items[q + 1][m]);
  }
  return s;
}

double bit_errors_per_sequence(const Tensor& logits, const Tensor& target) {
  if (logits.shape() != target.shape())
    throw ShapeError(fmt::format("bit errors: logits {} and target {} differ", logits.shape().str(), target.shape().str()));
  double wrong = 0;
  for (std::int64_t k = 0; k < logits.numel(); ++k) wrong += (logits.get(k) > 0) != (target.get(k) > 0.5);
  return wrong / double(logits.shape().batch);
}

}  // namespace matmem
