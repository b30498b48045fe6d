#include "matmem/models/tasks/tasks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include <fmt/format.h>

#include "matmem/models/tasks/frames.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

const char* split_name(Split s) {
  switch (s) {
    case Split::train: return "train";
    case Split::validation: return "validation";
    case Split::test: return "test";
  }
  return "?";
}

namespace {
using frames::put;
using frames::set_row;
void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}
// The first `rows` rows of sequence b's matrix of `from` into sequence b's matrix of `to` (the same dtype).
void copy_matrix(const Tensor& from, Tensor& to, std::int64_t b, std::int64_t rows) {
  dispatch(to.dtype(), [&](auto z) {
    using T = decltype(z);
    const TensorView<T> x = to.view<T>();
    const TensorView<const T> y = from.view<T>();
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < x.shape.cols; ++j) x.at(b, i, j) = y.at(b, i, j);
  });
}
void random_bits(Rng& rng, Tensor& m) {
  dispatch(m.dtype(), [&](auto z) {
    using T = decltype(z);
    for (T& v : m.view<T>()) v = T(rng.coin());
  });
}
}  // namespace

// The frames are written element by element for every sequence drawn: through typed pointers, not
// Tensor::set (a dtype dispatch per element).
void frames::set_row(Tensor& f, std::int64_t row, double v) {
  dispatch(f.dtype(), [&](auto z) {
    using T = decltype(z);
    const TensorView<T> x = f.view<T>();
    for (std::int64_t b = 0; b < x.shape.batch; ++b)
      for (std::int64_t j = 0; j < x.shape.cols; ++j) x.at(b, row, j) = T(v);
  });
}

void frames::put(Tensor& f, const Tensor& m) {
  dispatch(f.dtype(), [&](auto z) {
    using T = decltype(z);
    const TensorView<T> x = f.view<T>();
    dispatch(m.dtype(), [&](auto w) {
      using U = decltype(w);
      const TensorView<const U> y = m.view<U>();
      for (std::int64_t b = 0; b < y.shape.batch; ++b)
        for (std::int64_t i = 0; i < y.shape.rows; ++i)
          for (std::int64_t j = 0; j < y.shape.cols; ++j) x.at(b, i, j) = T(y.at(b, i, j));
    });
  });
}

const char* cost_name(TargetKind kind) {
  switch (kind) {
    case TargetKind::bits: return "bits/seq";
    case TargetKind::classes: return "errors/seq";
    case TargetKind::reals: return "nmse";
    case TargetKind::probabilities: return "xent bits/seq";
  }
  return "?";
}

const char* target_kind_name(TargetKind kind) {
  switch (kind) {
    case TargetKind::bits: return "bits";
    case TargetKind::classes: return "classes";
    case TargetKind::reals: return "reals";
    case TargetKind::probabilities: return "probabilities";
  }
  return "?";
}

// --- Sequence ------------------------------------------------------------------------------------------------
void Sequence::reset() {
  graph.reset();
  for (Tensor& t : inputs) spare_.push_back(std::move(t));
  for (Tensor& t : targets) spare_.push_back(std::move(t));
  inputs.clear();
  targets.clear();
  target_steps.clear();
  lane_mask.clear();
  optimal_cost.clear();
}

Tensor Sequence::take(DType dtype, Shape shape) {
  for (std::size_t k = spare_.size(); k-- > 0;)
    if (spare_[k].shape() == shape && spare_[k].dtype() == dtype) {
      Tensor t = std::move(spare_[k]);
      spare_[k] = std::move(spare_.back());
      spare_.pop_back();
      t.fill(0.0);
      return t;
    }
  return Tensor(dtype, shape);
}

Tensor& Sequence::add_input(DType dtype, Shape shape) {
  inputs.push_back(take(dtype, shape));
  return inputs.back();
}

Tensor& Sequence::add_target(DType dtype, Shape shape, std::int64_t step) {
  targets.push_back(take(dtype, shape));
  target_steps.push_back(step);
  return targets.back();
}

void batch_slice(const Sequence& from, std::int64_t first, std::int64_t count, Sequence& out) {
  // Frames [B,r,c] are batch-interleaved rows (runtime/shape.hpp): row i of items first.. is one run.
  auto slice = [&](const Tensor& x, Tensor& y) {
    const Shape& s = x.shape();
    if (s.slots != 1 || first < 0 || count < 1 || first + count > s.batch)
      throw Error(fmt::format("batch_slice: sequences {}..{} of frames {}", first, first + count - 1, s.str()));
    const std::size_t run = std::size_t(count * s.cols) * size_of(x.dtype());
    const auto* src = static_cast<const std::byte*>(x.raw());
    auto* dst = static_cast<std::byte*>(y.raw());
    for (std::int64_t i = 0; i < s.rows; ++i)
      std::memcpy(dst + std::size_t(i) * run, src + std::size_t(s.offset(first, 0, i, 0)) * size_of(x.dtype()), run);
  };
  out.reset();
  out.kind = from.kind;
  out.graph = from.graph;  // a graph model refuses a slice: its batch is no longer the graph's nodes
  for (const Tensor& x : from.inputs)
    slice(x, out.add_input(x.dtype(), matrices(count, x.shape().rows, x.shape().cols)));
  for (std::size_t k = 0; k < from.targets.size(); ++k) {
    const Tensor& x = from.targets[k];
    slice(x, out.add_target(x.dtype(), matrices(count, x.shape().rows, x.shape().cols), from.target_steps[k]));
  }
  if (!from.optimal_cost.empty())
    out.optimal_cost.assign(from.optimal_cost.begin() + first, from.optimal_cost.begin() + first + count);
  if (!from.lane_mask.empty()) {
    const std::int64_t B = from.inputs.empty() ? 0 : from.inputs[0].shape().batch;
    for (std::size_t k = 0; k < from.targets.size(); ++k)
      for (std::int64_t b = first; b < first + count; ++b) out.lane_mask.push_back(from.lane_mask[k * std::size_t(B) + std::size_t(b)]);
  }
}

// --- Task ----------------------------------------------------------------------------------------------------
Sequence Task::sample(Rng& rng, DType dtype) const {
  Sequence s;
  sample_into(rng, s, dtype);
  return s;
}

Sequence Task::sample_size(Rng& rng, std::int64_t size, DType dtype) const {
  Sequence s;
  sample_size_into(rng, size, s, dtype);
  return s;
}

CopyTask::CopyTask(CopyTaskOptions o) : o_(o) {
  require(o.rows >= 1 && o.cols >= 1, fmt::format("copy task: rows and cols must be ≥ 1 (got {}×{})", o.rows, o.cols));
  require(o.min_length >= 1 && o.min_length <= o.max_length,
          fmt::format("copy task: need 1 ≤ min_length ≤ max_length (got {}..{})", o.min_length, o.max_length));
  require(o.batch >= 1, fmt::format("copy task: batch must be ≥ 1 (got {})", o.batch));
}

void CopyTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, rng.uniform_int(o_.min_length, o_.max_length), out, dtype);
}

void CopyTask::sample_size_into(Rng& rng, std::int64_t l, Sequence& s, DType dtype) const {
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols;
  s.reset();
  for (std::int64_t t = 0; t < l; ++t) {
    Tensor& x = s.add_target(dtype, matrices(B, r, c), l + 1 + t);
    random_bits(rng, x);
    put(s.add_input(dtype, matrices(B, r + 1, c)), x);
  }
  set_row(s.add_input(dtype, matrices(B, r + 1, c)), r, 1.0);
  for (std::int64_t t = 0; t < l; ++t) s.add_input(dtype, matrices(B, r + 1, c));
}

RecallTask::RecallTask(RecallTaskOptions o) : o_(o) {
  require(o.rows >= 1 && o.cols >= 1, fmt::format("recall task: rows and cols must be ≥ 1 (got {}×{})", o.rows, o.cols));
  require(o.min_items >= 2 && o.min_items <= o.max_items,
          fmt::format("recall task: need 2 ≤ min_items ≤ max_items (got {}..{})", o.min_items, o.max_items));
  require(o.item_matrices >= 1, "recall task: item_matrices must be ≥ 1");
  require(o.batch >= 1, fmt::format("recall task: batch must be ≥ 1 (got {})", o.batch));
}

void RecallTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, rng.uniform_int(o_.min_items, o_.max_items), out, dtype);
}

void RecallTask::sample_size_into(Rng& rng, std::int64_t k, Sequence& s, DType dtype) const {
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols, n = o_.item_matrices;
  const Shape frame = matrices(B, r + 2, c), item = matrices(B, r, c);
  s.reset();
  // Each item matrix is drawn straight into its frame, bit by bit in the physical order of a [B,r,c]
  // matrix (as random_bits draws), so a seed gives the same items whichever buffers are reused.
  for (std::int64_t it = 0; it < k; ++it) {
    set_row(s.add_input(dtype, frame), r, 1.0);
    for (std::int64_t m = 0; m < n; ++m) {
      Tensor& x = s.add_input(dtype, frame);
      for (std::int64_t q = 0; q < item.numel(); ++q) {
        const std::int64_t j = q % c, rest = q / c, b = rest % B, i = rest / B;
        x.set(x.shape().offset(b, 0, i, j), double(rng.coin()));
      }
    }
  }
  // The query delimiter, n query frames, the query delimiter, n blank frames and their targets.
  const std::size_t query = s.inputs.size() + 1;
  set_row(s.add_input(dtype, frame), r + 1, 1.0);
  for (std::int64_t m = 0; m < n; ++m) s.add_input(dtype, frame);
  set_row(s.add_input(dtype, frame), r + 1, 1.0);
  for (std::int64_t m = 0; m < n; ++m) {
    const std::int64_t step = std::int64_t(s.inputs.size());
    s.add_input(dtype, frame);
    s.add_target(dtype, item, step);
  }
  // Each sequence b queries its own item c_b ~ U{0..k−2} (0-based), so that item c_b + 1, its target, exists.
  auto item_frame = [&](std::int64_t it, std::int64_t m) -> const Tensor& { return s.inputs[it * (n + 1) + 1 + m]; };
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t c_b = rng.uniform_int(std::int64_t(0), k - 2);
    for (std::int64_t m = 0; m < n; ++m) {
      copy_matrix(item_frame(c_b, m), s.inputs[query + std::size_t(m)], b, r);
      copy_matrix(item_frame(c_b + 1, m), s.targets[std::size_t(m)], b, r);
    }
  }
}

template <class T>
double bit_errors_per_sequence(const T* logits, const Tensor& target) {
  std::int64_t wrong = 0;
  dispatch(target.dtype(), [&](auto z) {
    using U = decltype(z);
    const U* t = target.view<U>().data;
    for (std::int64_t k = 0; k < target.numel(); ++k) wrong += (logits[k] > 0) != (t[k] > U(0.5));
  });
  return double(wrong) / double(target.shape().batch);
}
template double bit_errors_per_sequence<float>(const float*, const Tensor&);
template double bit_errors_per_sequence<double>(const double*, const Tensor&);

double bit_errors_per_sequence(const Tensor& logits, const Tensor& target) {
  if (logits.shape() != target.shape())
    throw ShapeError(fmt::format("bit errors: logits {} and target {} differ", logits.shape().str(), target.shape().str()));
  return dispatch(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    return bit_errors_per_sequence(logits.view<T>().data, target);
  });
}

template <class T>
double cross_entropy_bits_per_sequence(const T* logits, const Tensor& target) {
  double nats = 0;
  dispatch(target.dtype(), [&](auto z) {
    using U = decltype(z);
    const U* t = target.view<U>().data;
    for (std::int64_t k = 0; k < target.numel(); ++k) {
      // softplus(y) − y t, with softplus(y) = max(y, 0) + log1p(e^−|y|) (no overflow).
      const double y = double(logits[k]);
      nats += std::max(y, 0.0) + std::log1p(std::exp(-std::abs(y))) - y * double(t[k]);
    }
  });
  return nats / std::numbers::ln2 / double(target.shape().batch);
}
template double cross_entropy_bits_per_sequence<float>(const float*, const Tensor&);
template double cross_entropy_bits_per_sequence<double>(const double*, const Tensor&);

double cross_entropy_bits_per_sequence(const Tensor& logits, const Tensor& target) {
  if (logits.shape() != target.shape())
    throw ShapeError(fmt::format("cross-entropy: logits {} and target {} differ", logits.shape().str(), target.shape().str()));
  return dispatch(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    return cross_entropy_bits_per_sequence(logits.view<T>().data, target);
  });
}

template <class T>
double class_errors_per_sequence(const T* logits, const Tensor& target) {
  std::int64_t wrong = 0, lanes = 0;
  dispatch(target.dtype(), [&](auto z) {
    using U = decltype(z);
    const U* t = target.view<U>().data;
    // Frames are batch-interleaved (runtime/shape.hpp), but a row's c columns are contiguous either way.
    const std::int64_t c = target.shape().cols, rows = target.numel() / c;
    const std::int64_t B = target.shape().batch;
    std::vector<char> labelled(std::size_t(B), 0);
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* x = logits + r * c;
      const U* y = t + r * c;
      const U* top = std::max_element(y, y + c);
      if (*top == U(0) && std::all_of(y, y + c, [](U v) { return v == U(0); })) continue;  // no target here
      labelled[std::size_t(r % B)] = 1;  // row r of the frame is row r / B of sequence r % B
      wrong += std::max_element(x, x + c) - x != top - y;
    }
    lanes = std::count(labelled.begin(), labelled.end(), 1);
  });
  return lanes ? double(wrong) / double(lanes) : 0.0;
}
template double class_errors_per_sequence<float>(const float*, const Tensor&);
template double class_errors_per_sequence<double>(const double*, const Tensor&);

double class_errors_per_sequence(const Tensor& logits, const Tensor& target) {
  if (logits.shape() != target.shape())
    throw ShapeError(fmt::format("class errors: logits {} and target {} differ", logits.shape().str(), target.shape().str()));
  return dispatch(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    return class_errors_per_sequence(logits.view<T>().data, target);
  });
}

}  // namespace matmem
