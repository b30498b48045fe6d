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
//
// The fixed-data protocol of Ba et al. §4.1 (FixedRetrievalTask, `task.fixed = true`): a data set of N_train +
// N_valid + N_test strings (task.train_strings, task.validation_strings, task.test_strings: 100,000, 10,000,
// 20,000), drawn once, string by string as above, from an Rng of its own seeded by task.data_seed (not the run's
// seed: every model seed sees the same data), train first, then validation, then test. A string that equals
// one drawn before (its 2K + 3 symbols) is drawn again, so no string occurs twice in the data set and the
// three parts are disjoint as sets of strings. Kept as symbol codes, (2K + 3) + 1 bytes a string (1.4 MB for
// 130,000 strings of K = 4); frames are made a batch at a time. Training reads the train part by epochs:
// step k takes positions (k mod E)·B … (k mod E)·B + B − 1 of epoch ⌊k/E⌋'s order, E = ⌊N_train/B⌋, the order
// a Fisher–Yates shuffle from an Rng seeded by the run's seed and the epoch (as models/data/fashion_mnist.hpp),
// so in each epoch every training string but the last N_train mod B of its order is read exactly once.
#pragma once
#include <cstdint>
#include <vector>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

struct RetrievalOptions {
  std::int64_t pairs = 4, batch = 16;
};

// One string of K pairs drawn from `rng` as the file says: its 2K + 3 symbol codes (0..36) into symbols[],
// and the target digit (0..9) returned.
std::int64_t draw_retrieval_string(Rng& rng, std::int64_t pairs, std::uint8_t* symbols);

class RetrievalTask : public Task {
 public:
  static constexpr std::int64_t kLetters = 26, kDigits = 10, kSymbols = 37, kQuery = 36;
  explicit RetrievalTask(RetrievalOptions o);
  const char* name() const override { return "retrieval"; }
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t pairs, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "pairs"; }
  MemoryProbes memory_probes() const override { return {1, 3, o_.pairs}; }
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

struct FixedRetrievalOptions {
  std::int64_t pairs = 4, batch = 128;
  std::int64_t train = 100000, validation = 10000, test = 20000;  // strings of each part
  std::uint64_t data_seed = 1;  // the data set's
  std::uint64_t seed = 1;       // the run's: the epochs' orders
};

// Associative retrieval on a fixed data set in three parts (see the file).
class FixedRetrievalTask : public SplitTask {
 public:
  explicit FixedRetrievalTask(FixedRetrievalOptions o);
  const char* name() const override { return "retrieval"; }
  // Training's batches: step k of the run by epochs (the file); the Rng is not used.
  void sample_step_into(std::int64_t step, Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  // B training strings drawn uniformly from the Rng (examples, memory probes).
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  // As sample_into at the data set's K; at another K, fresh strings from the Rng as RetrievalTask draws them
  // (the memory estimate's probes).
  void sample_size_into(Rng& rng, std::int64_t pairs, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "pairs"; }
  MemoryProbes memory_probes() const override { return {1, 3, o_.pairs}; }
  const char* example_name() const override { return "strings"; }
  std::vector<std::int64_t> eval_sizes() const override { return {o_.pairs}; }
  std::int64_t input_rows() const override { return 1; }
  std::int64_t input_cols() const override { return RetrievalTask::kSymbols; }
  std::int64_t output_rows() const override { return 1; }
  std::int64_t output_cols() const override { return RetrievalTask::kDigits; }
  std::int64_t batch() const override { return o_.batch; }
  TargetKind target_kind() const override { return TargetKind::classes; }
  std::int64_t split_size(Split s) const override;
  void split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                        DType dtype = DType::f32) const override;
  // Epoch e's order of the train part (positions in it).
  std::vector<std::int64_t> epoch_order(std::int64_t epoch) const;
  // String i of part s: its 2K + 3 symbol codes and its target digit.
  const std::uint8_t* symbols(Split s, std::int64_t i) const;
  std::int64_t digit(Split s, std::int64_t i) const;
  const FixedRetrievalOptions& options() const { return o_; }

 private:
  // Strings index[0..count) of the data set (0-based over all parts, train first) as one batch.
  void fill(const std::int64_t* index, std::int64_t count, Sequence& out, DType dtype) const;
  std::int64_t first(Split s) const;  // the data set index of part s's first string

  FixedRetrievalOptions o_;
  std::vector<std::uint8_t> symbols_, digits_;  // (2K + 3) and 1 a string, all parts, train first
  mutable std::int64_t cached_epoch_ = -1;
  mutable std::vector<std::int64_t> order_, batch_index_;
};

}  // namespace matmem

namespace matmem {

// Matrix associative retrieval (task `matrix_retrieval`): the retrieval task with matrices for symbols. K pairs
// of an r×c binary key matrix and an r×c binary value matrix, then two query-delimiter frames and one of the K
// keys; the target is that key's value.
//   Keys: K distinct matrices of {0,1}^{r×c} (each element Bernoulli(½), a key equal to one before it drawn
//   again); values Bernoulli(½) each (they may repeat); the query one of the K keys, uniformly. Each sequence of
//   the batch draws its own. Frames are (r+2)×c: rows 0..r−1 the content, row r all 1 on a key frame (the K
//   keys and the query), row r+1 all 1 on a query-delimiter frame (content 0). Steps 0..2K−1: key, value, key,
//   value, …; steps 2K and 2K+1 the delimiters; step 2K+2 the query key. 2K + 3 steps in all.
//   One target, at the last step: the query's value, r×c bits (TargetKind::bits: the BCE loss, the cost the
//   bit errors per sequence).
// Size: the number of pairs K ("pairs", task.pairs), 1 ≤ K ≤ 2^(r·c) (distinct keys); r, c = task.rows, task.cols.
struct MatrixRetrievalOptions {
  std::int64_t rows = 3, cols = 3, pairs = 4, batch = 16;
};

class MatrixRetrievalTask : public Task {
 public:
  explicit MatrixRetrievalTask(MatrixRetrievalOptions o);
  const char* name() const override { return "matrix_retrieval"; }
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t pairs, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "pairs"; }
  MemoryProbes memory_probes() const override { return {1, 3, o_.pairs}; }
  std::vector<std::int64_t> eval_sizes() const override { return {o_.pairs}; }
  std::int64_t input_rows() const override { return o_.rows + 2; }
  std::int64_t input_cols() const override { return o_.cols; }
  std::int64_t output_rows() const override { return o_.rows; }
  std::int64_t output_cols() const override { return o_.cols; }
  std::int64_t batch() const override { return o_.batch; }
  const MatrixRetrievalOptions& options() const { return o_; }

 private:
  MatrixRetrievalOptions o_;
};

}  // namespace matmem
