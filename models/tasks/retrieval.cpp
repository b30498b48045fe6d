#include "matmem/models/tasks/retrieval.hpp"

#include <array>
#include <numeric>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

RetrievalTask::RetrievalTask(RetrievalOptions o) : o_(o) {
  if (o.pairs < 1 || o.pairs > kLetters)
    throw Error(fmt::format("retrieval task: task.pairs = {} must be in 1..26 (the keys are distinct letters)", o.pairs));
  if (o.batch < 1) throw Error(fmt::format("retrieval task: batch must be ≥ 1 (got {})", o.batch));
}

void RetrievalTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, o_.pairs, out, dtype);
}

void RetrievalTask::sample_size_into(Rng& rng, std::int64_t K, Sequence& s, DType dtype) const {
  if (K < 1 || K > kLetters)
    throw Error(fmt::format("retrieval task: {} pairs; the keys are distinct letters, so 1..26", K));
  const std::int64_t B = o_.batch;
  s.reset();
  s.kind = TargetKind::classes;
  for (std::int64_t t = 0; t < 2 * K + 3; ++t) s.add_input(dtype, matrices(B, 1, kSymbols));
  Tensor& target = s.add_target(dtype, matrices(B, 1, kDigits), 2 * K + 2);
  auto one_hot = [&](Tensor& x, std::int64_t b, std::int64_t j) { x.set(x.shape().offset(b, 0, 0, j), 1.0); };
  std::array<std::int64_t, kLetters> letters;
  for (std::int64_t b = 0; b < B; ++b) {
    // The first K of a partial Fisher–Yates shuffle: K distinct letters.
    std::iota(letters.begin(), letters.end(), 0);
    for (std::int64_t k = 0; k < K; ++k) std::swap(letters[std::size_t(k)], letters[std::size_t(rng.uniform_int(k, kLetters - 1))]);
    std::int64_t digits[kLetters];
    for (std::int64_t k = 0; k < K; ++k) {
      digits[k] = rng.uniform_int(std::int64_t(0), kDigits - 1);
      one_hot(s.inputs[std::size_t(2 * k)], b, letters[std::size_t(k)]);
      one_hot(s.inputs[std::size_t(2 * k + 1)], b, kLetters + digits[k]);
    }
    one_hot(s.inputs[std::size_t(2 * K)], b, kQuery);
    one_hot(s.inputs[std::size_t(2 * K + 1)], b, kQuery);
    const std::int64_t q = rng.uniform_int(std::int64_t(0), K - 1);
    one_hot(s.inputs[std::size_t(2 * K + 2)], b, letters[std::size_t(q)]);
    one_hot(target, b, digits[q]);
  }
}

}  // namespace matmem
