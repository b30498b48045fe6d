#include "matmem/models/tasks/ngrams.hpp"

#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

NgramTask::NgramTask(NgramOptions o) : o_(o) {
  if (o.order < 2 || o.order > 17)
    throw Error(fmt::format("ngrams task: the order N must be 2..17 (contexts of 1..16 bits; got {})", o.order));
  if (o.length < 1) throw Error(fmt::format("ngrams task: length must be ≥ 1 bit (got {})", o.length));
  if (o.batch < 1) throw Error(fmt::format("ngrams task: batch must be ≥ 1 (got {})", o.batch));
}

void NgramTask::sample_into(Rng& rng, Sequence& out, DType dtype) const { sample_size_into(rng, o_.length, out, dtype); }

void NgramTask::sample_size_into(Rng& rng, std::int64_t L, Sequence& out, DType dtype) const {
  if (L < 1) throw Error(fmt::format("ngrams task: {} bits; need at least 1", L));
  const std::int64_t contexts = std::int64_t(1) << (o_.order - 1), mask = contexts - 1;
  std::vector<std::vector<int>> bits(std::size_t(o_.batch), std::vector<int>(std::size_t(L)));
  std::vector<double> p(static_cast<std::size_t>(contexts));
  for (auto& seq : bits) {
    for (double& v : p) {
      const double s = std::sin(std::numbers::pi / 2 * rng.uniform());
      v = s * s;  // Beta(½, ½)
    }
    std::int64_t ctx = 0;
    for (std::int64_t t = 0; t < L; ++t) {  // the first N − 1 bits fair coins, then the table's
      int& b = seq[std::size_t(t)];
      b = rng.uniform() < (t < o_.order - 1 ? 0.5 : p[std::size_t(ctx)]) ? 1 : 0;
      ctx = ((ctx << 1) | b) & mask;
    }
  }
  write(bits, out, dtype);
}

double NgramTask::optimal_cost(const std::vector<int>& bits, std::int64_t context_bits) {
  const std::int64_t mask = (std::int64_t(1) << context_bits) - 1;
  std::vector<double> ones(std::size_t(mask + 1), 0.0), seen(std::size_t(mask + 1), 0.0);
  double cost = 0;
  std::int64_t ctx = 0;
  for (std::size_t t = 0; t < bits.size(); ++t) {
    const int b = bits[t];
    if (std::int64_t(t) < context_bits) {
      cost += 1;  // no context yet: ½
    } else {
      const double p1 = (ones[std::size_t(ctx)] + 0.5) / (seen[std::size_t(ctx)] + 1);
      cost -= std::log2(b ? p1 : 1 - p1);
      ones[std::size_t(ctx)] += b;
      seen[std::size_t(ctx)] += 1;
    }
    ctx = ((ctx << 1) | b) & mask;
  }
  return cost;
}

void NgramTask::write(const std::vector<std::vector<int>>& bits, Sequence& s, DType dtype) const {
  const std::int64_t B = o_.batch;
  if (std::int64_t(bits.size()) != B || bits[0].empty())
    throw Error(fmt::format("ngrams task: {} sequences for a batch of {}", bits.size(), B));
  const std::size_t L = bits[0].size();
  for (const auto& seq : bits)
    if (seq.size() != L) throw Error("ngrams task: the sequences of a batch differ in length");
  const Shape frame = matrices(B, 1, 1);
  s.reset();
  s.kind = TargetKind::probabilities;
  for (std::size_t t = 0; t < L; ++t) {
    Tensor& x = s.add_input(dtype, frame);
    Tensor& y = s.add_target(dtype, frame, std::int64_t(t));
    for (std::int64_t b = 0; b < B; ++b) {
      if (t > 0) x.set(frame.offset(b, 0, 0, 0), double(bits[std::size_t(b)][t - 1]));
      y.set(frame.offset(b, 0, 0, 0), double(bits[std::size_t(b)][t]));
    }
  }
  for (const auto& seq : bits) s.optimal_cost.push_back(optimal_cost(seq, o_.order - 1));
}

}  // namespace matmem
