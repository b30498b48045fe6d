#include "matmem/models/tasks/priority_sort.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

PrioritySortTask::PrioritySortTask(PrioritySortOptions o) : o_(o) {
  if (o.rows < 1 || o.cols < 1)
    throw Error(fmt::format("priority_sort task: rows and cols must be ≥ 1 (got {}×{})", o.rows, o.cols));
  if (o.outputs < 1 || o.outputs > o.inputs)
    throw Error(fmt::format("priority_sort task: need 1 ≤ outputs ≤ inputs (got {} of {})", o.outputs, o.inputs));
  if (o.batch < 1) throw Error(fmt::format("priority_sort task: batch must be ≥ 1 (got {})", o.batch));
}

std::int64_t PrioritySortTask::outputs_for(std::int64_t m) const {
  return std::clamp<std::int64_t>((2 * m * o_.outputs + o_.inputs) / (2 * o_.inputs), 1, m);
}

void PrioritySortTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, o_.inputs, out, dtype);
}

void PrioritySortTask::sample_size_into(Rng& rng, std::int64_t m, Sequence& out, DType dtype) const {
  if (m < 1) throw Error(fmt::format("priority_sort task: {} inputs; need at least 1", m));
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols;
  std::vector<Tensor> x;
  for (std::int64_t i = 0; i < m; ++i) x.emplace_back(dtype, matrices(B, r, c));
  std::vector<double> priority(std::size_t(m * B));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t q = 0; q < r; ++q)
        for (std::int64_t j = 0; j < c; ++j) x[std::size_t(i)].set(x[std::size_t(i)].shape().offset(b, 0, q, j), double(rng.coin()));
    for (std::int64_t i = 0; i < m; ++i) priority[std::size_t(i * B + b)] = rng.uniform(-1.0, 1.0);
  }
  write(x, priority, outputs_for(m), out, dtype);
}

void PrioritySortTask::write(const std::vector<Tensor>& x, const std::vector<double>& priority, std::int64_t k,
                             Sequence& s, DType dtype) const {
  const std::int64_t B = o_.batch, r = o_.rows, c = o_.cols, m = std::int64_t(x.size());
  if (m < 1 || k < 1 || k > m || priority.size() != std::size_t(m * B))
    throw Error(fmt::format("priority_sort task: {} matrices, {} priorities, {} outputs", m, priority.size(), k));
  const Shape in = matrices(B, r + 2, c), out = matrices(B, r, c);
  s.reset();
  for (std::int64_t i = 0; i < m; ++i) {
    Tensor& f = s.add_input(dtype, in);
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t q = 0; q < r; ++q)
        for (std::int64_t j = 0; j < c; ++j) f.set(in.offset(b, 0, q, j), x[std::size_t(i)].at(b, q, j));
      for (std::int64_t j = 0; j < c; ++j) f.set(in.offset(b, 0, r, j), priority[std::size_t(i * B + b)]);
    }
  }
  Tensor& delimiter = s.add_input(dtype, in);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < c; ++j) delimiter.set(in.offset(b, 0, r + 1, j), 1.0);
  for (std::int64_t q = 0; q < k; ++q) {
    s.add_input(dtype, in);
    s.add_target(dtype, out, m + 1 + q);
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(m));
  for (std::int64_t b = 0; b < B; ++b) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t i, std::int64_t j) {
      return priority[std::size_t(i * B + b)] > priority[std::size_t(j * B + b)];
    });
    for (std::int64_t q = 0; q < k; ++q) {
      Tensor& y = s.targets[std::size_t(q)];
      const Tensor& from = x[std::size_t(order[std::size_t(q)])];
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t j = 0; j < c; ++j) y.set(out.offset(b, 0, i, j), from.at(b, i, j));
    }
  }
}

}  // namespace matmem
