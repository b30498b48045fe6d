#include "matmem/models/tasks/retrieval.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

std::int64_t draw_retrieval_string(Rng& rng, std::int64_t K, std::uint8_t* symbols) {
  constexpr std::int64_t kLetters = RetrievalTask::kLetters, kDigits = RetrievalTask::kDigits;
  std::array<std::int64_t, kLetters> letters;
  // The first K of a partial Fisher–Yates shuffle: K distinct letters.
  std::iota(letters.begin(), letters.end(), 0);
  for (std::int64_t k = 0; k < K; ++k) std::swap(letters[std::size_t(k)], letters[std::size_t(rng.uniform_int(k, kLetters - 1))]);
  std::int64_t digits[kLetters];
  for (std::int64_t k = 0; k < K; ++k) {
    digits[k] = rng.uniform_int(std::int64_t(0), kDigits - 1);
    symbols[2 * k] = std::uint8_t(letters[std::size_t(k)]);
    symbols[2 * k + 1] = std::uint8_t(kLetters + digits[k]);
  }
  symbols[2 * K] = symbols[2 * K + 1] = std::uint8_t(RetrievalTask::kQuery);
  const std::int64_t q = rng.uniform_int(std::int64_t(0), K - 1);
  symbols[2 * K + 2] = std::uint8_t(letters[std::size_t(q)]);
  return digits[q];
}

namespace {
// Strings symbols[b·T …] (T = 2K + 3 codes each) with target digits[b], b < count, as one batch of frames.
void fill_strings(std::int64_t K, std::int64_t count, const std::uint8_t* const* symbols, const std::int64_t* digits,
                  Sequence& s, DType dtype) {
  s.reset();
  s.kind = TargetKind::classes;
  for (std::int64_t t = 0; t < 2 * K + 3; ++t) s.add_input(dtype, matrices(count, 1, RetrievalTask::kSymbols));
  Tensor& target = s.add_target(dtype, matrices(count, 1, RetrievalTask::kDigits), 2 * K + 2);
  auto one_hot = [&](Tensor& x, std::int64_t b, std::int64_t j) { x.set(x.shape().offset(b, 0, 0, j), 1.0); };
  for (std::int64_t b = 0; b < count; ++b) {
    for (std::int64_t t = 0; t < 2 * K + 3; ++t) one_hot(s.inputs[std::size_t(t)], b, symbols[b][t]);
    one_hot(target, b, digits[b]);
  }
}
}  // namespace

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
  const std::int64_t B = o_.batch, T = 2 * K + 3;
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(B * T));
  std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(B));
  std::vector<std::int64_t> digits(static_cast<std::size_t>(B));
  for (std::int64_t b = 0; b < B; ++b) {
    rows[std::size_t(b)] = codes.data() + b * T;
    digits[std::size_t(b)] = draw_retrieval_string(rng, K, codes.data() + b * T);
  }
  fill_strings(K, B, rows.data(), digits.data(), s, dtype);
}

FixedRetrievalTask::FixedRetrievalTask(FixedRetrievalOptions o) : o_(o) {
  const std::int64_t K = o.pairs;
  if (K < 1 || K > RetrievalTask::kLetters)
    throw Error(fmt::format("retrieval task: task.pairs = {} must be in 1..26 (the keys are distinct letters)", K));
  if (o.batch < 1) throw Error(fmt::format("retrieval task: batch must be ≥ 1 (got {})", o.batch));
  if (o.train < o.batch || o.validation < 0 || o.test < 0)
    throw Error(fmt::format("retrieval task: task.train_strings = {}, task.validation_strings = {}, "
                            "task.test_strings = {}: the train part needs one batch ({}) at least, the others none "
                            "or more",
                            o.train, o.validation, o.test, o.batch));
  // The distinct strings there are: K ordered distinct letters, K digits, one of K queries.
  double distinct = double(K);
  for (std::int64_t k = 0; k < K; ++k) distinct *= double(RetrievalTask::kLetters - k) * RetrievalTask::kDigits;
  const std::int64_t n = o.train + o.validation + o.test, T = 2 * K + 3;
  if (double(n) > distinct / 2)
    throw Error(fmt::format("retrieval task: {} strings asked of the {} distinct strings of {} pairs (at most half "
                            "of them can be drawn distinct in reasonable time)",
                            n, distinct, K));
  symbols_.resize(std::size_t(n * T));
  digits_.resize(std::size_t(n));
  Rng rng(o.data_seed ^ 0x7e7a1e7a1e7a1e7aULL);
  std::unordered_set<std::string> seen;
  seen.reserve(std::size_t(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint8_t* at = symbols_.data() + i * T;
    do digits_[std::size_t(i)] = std::uint8_t(draw_retrieval_string(rng, K, at));
    while (!seen.emplace(reinterpret_cast<const char*>(at), std::size_t(T)).second);
  }
}

std::int64_t FixedRetrievalTask::split_size(Split s) const {
  return s == Split::train ? o_.train : s == Split::validation ? o_.validation : o_.test;
}

std::int64_t FixedRetrievalTask::first(Split s) const {
  return s == Split::train ? 0 : s == Split::validation ? o_.train : o_.train + o_.validation;
}

const std::uint8_t* FixedRetrievalTask::symbols(Split s, std::int64_t i) const {
  return symbols_.data() + (first(s) + i) * (2 * o_.pairs + 3);
}

std::int64_t FixedRetrievalTask::digit(Split s, std::int64_t i) const { return digits_[std::size_t(first(s) + i)]; }

std::vector<std::int64_t> FixedRetrievalTask::epoch_order(std::int64_t epoch) const {
  Rng rng((o_.seed ^ 0xe90c4e90c4e90c4eULL) + 0x9e3779b97f4a7c15ULL * std::uint64_t(epoch + 1));
  std::vector<std::int64_t> p(static_cast<std::size_t>(o_.train));
  std::iota(p.begin(), p.end(), 0);
  for (std::int64_t k = o_.train - 1; k > 0; --k) std::swap(p[std::size_t(k)], p[std::size_t(rng.uniform_int(std::int64_t(0), k))]);
  return p;
}

void FixedRetrievalTask::fill(const std::int64_t* index, std::int64_t count, Sequence& out, DType dtype) const {
  const std::int64_t T = 2 * o_.pairs + 3;
  std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(count));
  std::vector<std::int64_t> digits(static_cast<std::size_t>(count));
  for (std::int64_t b = 0; b < count; ++b) {
    rows[std::size_t(b)] = symbols_.data() + index[b] * T;
    digits[std::size_t(b)] = digits_[std::size_t(index[b])];
  }
  fill_strings(o_.pairs, count, rows.data(), digits.data(), out, dtype);
}

void FixedRetrievalTask::sample_step_into(std::int64_t step, Rng&, Sequence& out, DType dtype) const {
  const std::int64_t E = steps_per_epoch(), epoch = step / E, at = (step % E) * o_.batch;
  if (epoch != cached_epoch_) {
    order_ = epoch_order(epoch);
    cached_epoch_ = epoch;
  }
  batch_index_.resize(std::size_t(o_.batch));
  for (std::int64_t b = 0; b < o_.batch; ++b) batch_index_[std::size_t(b)] = order_[std::size_t(at + b)];
  fill(batch_index_.data(), o_.batch, out, dtype);
}

void FixedRetrievalTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  std::vector<std::int64_t> index(static_cast<std::size_t>(o_.batch));
  for (auto& i : index) i = std::int64_t(rng.uniform_int(std::uint64_t(o_.train)));
  fill(index.data(), o_.batch, out, dtype);
}

void FixedRetrievalTask::sample_size_into(Rng& rng, std::int64_t pairs, Sequence& out, DType dtype) const {
  if (pairs == o_.pairs) return sample_into(rng, out, dtype);
  RetrievalTask({.pairs = pairs, .batch = o_.batch}).sample_size_into(rng, pairs, out, dtype);
}

void FixedRetrievalTask::split_batch_into(Split s, std::int64_t at, std::int64_t count, Sequence& out,
                                          DType dtype) const {
  if (at < 0 || count < 1 || at + count > split_size(s))
    throw Error(fmt::format("retrieval task: strings {}..{} of the {} part, which holds {}", at, at + count - 1,
                            split_name(s), split_size(s)));
  std::vector<std::int64_t> index(static_cast<std::size_t>(count));
  std::iota(index.begin(), index.end(), first(s) + at);
  fill(index.data(), count, out, dtype);
}

namespace {
// The keys distinct: at most 2^(r·c) of them (any K when r·c ≥ 63).
bool keys_fit(std::int64_t K, std::int64_t rows, std::int64_t cols) {
  return rows * cols >= 63 || K <= (std::int64_t(1) << (rows * cols));
}
}  // namespace

MatrixRetrievalTask::MatrixRetrievalTask(MatrixRetrievalOptions o) : o_(o) {
  if (o.rows < 1 || o.cols < 1 || o.batch < 1)
    throw Error(fmt::format("matrix_retrieval task: task.rows = {}, task.cols = {}, batch = {} must be ≥ 1", o.rows,
                            o.cols, o.batch));
  if (o.pairs < 1 || !keys_fit(o.pairs, o.rows, o.cols))
    throw Error(fmt::format("matrix_retrieval task: task.pairs = {} must be in 1..2^(rows·cols) (distinct keys of "
                            "{}x{})",
                            o.pairs, o.rows, o.cols));
}

void MatrixRetrievalTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  sample_size_into(rng, o_.pairs, out, dtype);
}

void MatrixRetrievalTask::sample_size_into(Rng& rng, std::int64_t K, Sequence& s, DType dtype) const {
  const std::int64_t r = o_.rows, c = o_.cols, B = o_.batch, n = r * c;
  if (K < 1 || !keys_fit(K, r, c))
    throw Error(fmt::format("matrix_retrieval task: {} pairs; the keys are distinct {}x{} binary matrices", K, r, c));
  s.reset();
  s.kind = TargetKind::bits;
  for (std::int64_t t = 0; t < 2 * K + 3; ++t) s.add_input(dtype, matrices(B, r + 2, c));
  Tensor& target = s.add_target(dtype, matrices(B, r, c), 2 * K + 2);
  std::vector<std::vector<std::uint8_t>> keys(static_cast<std::size_t>(K)), values(static_cast<std::size_t>(K));
  auto put = [&](Tensor& x, std::int64_t b, const std::vector<std::uint8_t>& m) {
    for (std::int64_t k = 0; k < n; ++k)
      if (m[std::size_t(k)]) x.set(x.shape().offset(b, 0, k / c, k % c), 1.0);
  };
  auto mark = [&](Tensor& x, std::int64_t b, std::int64_t row) {
    for (std::int64_t j = 0; j < c; ++j) x.set(x.shape().offset(b, 0, row, j), 1.0);
  };
  auto draw = [&](std::vector<std::uint8_t>& m) {
    m.resize(std::size_t(n));
    for (auto& e : m) e = std::uint8_t(rng.uniform_int(std::uint64_t(2)));
  };
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t k = 0; k < K; ++k) {
      auto& key = keys[std::size_t(k)];
      do draw(key);
      while (std::find(keys.begin(), keys.begin() + k, key) != keys.begin() + k);
      draw(values[std::size_t(k)]);
      put(s.inputs[std::size_t(2 * k)], b, key);
      mark(s.inputs[std::size_t(2 * k)], b, r);
      put(s.inputs[std::size_t(2 * k + 1)], b, values[std::size_t(k)]);
    }
    mark(s.inputs[std::size_t(2 * K)], b, r + 1);
    mark(s.inputs[std::size_t(2 * K + 1)], b, r + 1);
    const std::int64_t q = rng.uniform_int(std::int64_t(0), K - 1);
    put(s.inputs[std::size_t(2 * K + 2)], b, keys[std::size_t(q)]);
    mark(s.inputs[std::size_t(2 * K + 2)], b, r);
    put(target, b, values[std::size_t(q)]);
  }
}

}  // namespace matmem
