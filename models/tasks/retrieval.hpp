// Associative retrieval (Ba et al. 2016, "Using Fast Weights to Attend to the Recent Past", §4.1; the task of
// 004 §8): a string of K letter–digit pairs, then "??" and one of the K letters; the target is that letter's
// digit. "c9k8j3f1??c" → 9.
//   The K letters are distinct, drawn without replacement from a–z; each digit U{0..9} (digits may repeat);
//   the query letter U over the K. Each sequence of the batch draws its own string.
//   Symbols one-hot in 37 columns: letters a–z 0–25, digits 0–9 26–35, '?' 36. Frames are 1×37 (the vector
//   case, rows = 1, of matmem's matrices): steps 0..2K−1 the pairs (letter, digit, letter, digit, …), steps 2K
//   and 2K+1 '?', step 2K+2 the query letter. 2K + 3 steps in all.
//   One target, at the last step: the digit as a class, a one-hot row of 10 (TargetKind::classes, so the
//   loss is the softmax cross-entropy of the 1×10 output and the cost the errors per sequence, the error rate).
// Size: the number of pairs K ("pairs"); training draws K = task.pairs. The held-out test set is `matmem
// eval`'s: sequences from the eval seed's Rng, a stream apart from the training data's (trainer.cpp).
#pragma once
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

struct RetrievalOptions {
  std::int64_t pairs = 4, batch = 16;
};

class RetrievalTask : public Task {
 public:
  static constexpr std::int64_t kLetters = 26, kDigits = 10, kSymbols = 37, kQuery = 36;
  explicit RetrievalTask(RetrievalOptions o);
  const char* name() const override { return "retrieval"; }
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t pairs, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "pairs"; }
  std::vector<std::int64_t> eval_sizes() const override { return {o_.pairs}; }
  std::int64_t input_rows() const override { return 1; }
  std::int64_t input_cols() const override { return kSymbols; }
  std::int64_t output_rows() const override { return 1; }
  std::int64_t output_cols() const override { return kDigits; }
  std::int64_t batch() const override { return o_.batch; }
  TargetKind target_kind() const override { return TargetKind::classes; }
  const RetrievalOptions& options() const { return o_; }

 private:
  RetrievalOptions o_;
};

}  // namespace matmem
