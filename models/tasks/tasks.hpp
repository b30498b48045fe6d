/// @file
/// The algorithmic tasks of 000 §6 (spec/models.md, "Tasks"), generated from the run's Rng; nothing is
/// downloaded. Vector versions are the special case rows = 1.
///
/// Matrix copy: l ~ U{min_length..max_length} (one l per batch) matrices X_i ∈ {0,1}^{r×c}, Bernoulli(½).
///   Frames are (r+1)×c, the last row the delimiter channel. Steps 1..l carry X_i (delimiter row 0);
///   step l+1 is the delimiter (content rows 0, delimiter row 1); steps l+2..2l+1 are blank and their
///   targets are X_1..X_l.  2l+1 steps in all.
/// Matrix associative recall: k ~ U{min_items..max_items} (one k per batch) items of n matrices X ∈ {0,1}^{r×c},
///   Bernoulli(½). Frames are (r+2)×c, row r the item delimiter, row r+1 the query delimiter. Each item is an
///   item-delimiter frame (content rows 0, row r 1) and its n matrices (delimiter rows 0); then a
///   query-delimiter frame (row r+1 1, all else 0), the n matrices of item q, a query-delimiter frame; then
///   n blank frames whose targets are item q+1. Each sequence of the batch draws its own q ~ U{1..k−1}, so a
///   following item exists.  k(n+1) + n + 2 + n steps in all.
/// Cost per sequence (the paper's figures): bit errors Σ |[Y > ½] − target| over the target frames,
/// averaged over the batch, for outputs Y = sigmoid(logits), i.e. [logit > 0].
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "matmem/runtime/random.hpp"
#include "matmem/runtime/tensor.hpp"

namespace matmem {

struct Neighbours;  // ops/graph.hpp

/// What a task's targets are; the Unroller (models/core/model.hpp) takes the loss and the cost by it.
///   bits:    targets in {0,1}; loss the mean BCE-with-logits over the target elements; cost the bit errors
///            per sequence, Σ |[logit > 0] − [target > ½]| over the target frames, / B.
///   classes: each row of a target frame is a one-hot class over the row's c columns (a vector output, rows
///            = 1, is one class over its elements), or a row of zeros: no target (a graph's unlabelled nodes);
///            loss the softmax cross-entropy of each row, averaged over the rows with a target, sequences and
///            target frames; cost the class errors per sequence, Σ [argmax row of the
///            logits ≠ argmax row of the target] over every row of every target frame, / B (with one target
///            row a sequence, the error rate).
///   reals:   real targets; loss the mean squared error over the target elements; cost the normalised MSE,
///            Σ (y − t)² / Σ (t − t̄)² over every target element of the batch (t̄ their mean), the plain MSE
///            when the targets do not vary. Not additive over a split batch: a batch run in parts reports
///            the parts' NMSE weighted by their sizes.
///   probabilities: targets in {0,1}, each output the logit of the probability of a 1; loss the mean BCE as for
///            bits; cost the cross-entropy in bits per sequence, Σ (softplus(y) − y t)/ln 2 over the target
///            elements (−log₂ of the probability given to each target bit), / B (models/tasks/ngrams.hpp).
/// The cost is what metrics.csv's column bits_per_sequence holds whatever the kind (the name is kept for
/// the files already written); what is printed is named by cost_name.
enum class TargetKind { bits, classes, reals, probabilities };
const char* cost_name(TargetKind kind);  ///< "bits/seq", "errors/seq", "nmse", "xent bits/seq"
const char* target_kind_name(TargetKind kind);  ///< "bits", "classes", "reals", "probabilities"

/// A batch of B sequences drawn by a task: the input frame of every time step and the targets of some.
struct Sequence {
  TargetKind kind = TargetKind::bits;  ///< set by the task that draws the sequence
  std::vector<Tensor> inputs;          ///< one [B, input_rows, c] frame per time step
  std::vector<Tensor> targets;         ///< one [B, r, c] per target step
  std::vector<std::int64_t> target_steps;  ///< the time step (0-based) of each target
  /// Graph tasks: the neighbours each lane (node) reads in this pass (models/tasks/graph.hpp); else empty.
  std::shared_ptr<const Neighbours> graph;
  /// Per-lane masks of the target steps, lane_mask[k·B + b] for target step k and sequence b: nonzero when
  /// sequence b has a target there (padding, sequences of different lengths: models/data/user_data.hpp).
  /// Empty: every sequence has a target at every target step. With a mask the loss is the mean over the
  /// sequences with a target of the mean over each one's target steps of its per-step loss (m ∈ {0,1}, n_b =
  /// Σ_k m_kb, B' the sequences with n_b > 0):  L = (1/B') Σ_b (1/n_b) Σ_k m_kb ℓ_kb,  ℓ_kb the kind's loss
  /// of sequence b's output at step k (the mean BCE or squared error over its elements, the mean softmax
  /// cross-entropy over its rows); a masked-out lane adds nothing to the loss, its gradient or the cost, and
  /// the cost is divided by B'. With every mask 1 this is the loss without a mask.
  std::vector<float> lane_mask;
  /// A task whose cost has a known floor (dynamic N-grams: the optimal predictor's cross-entropy in bits,
  /// models/tasks/ngrams.hpp): that floor, one value per sequence of the batch; empty when the task has none.
  std::vector<double> optimal_cost;

  /// Drawing into a Sequence again reuses its buffers: reset() keeps every tensor aside, and the next
  /// add_input/add_target of the same shape takes one back (zeroed), so a training loop allocates nothing.
  void reset();
  /// Appends a zeroed input frame (the next time step's) and returns it.
  Tensor& add_input(DType dtype, Shape shape);
  /// Appends a zeroed target for time step `step` and returns it.
  Tensor& add_target(DType dtype, Shape shape, std::int64_t step);

 private:
  Tensor take(DType dtype, Shape shape);
  std::vector<Tensor> spare_;
};

/// Sequences first..first+count−1 of `from`'s batch, into `out` (reusing its buffers as Task::sample_into
/// does): the part of a batch one thread trains on (models/training/trainer.hpp).
void batch_slice(const Sequence& from, std::int64_t first, std::int64_t count, Sequence& out);

/// A task: draws batches of sequences from the run's Rng. size is the copy length or the recall item count.
class Task {
 public:
  virtual ~Task() = default;
  virtual const char* name() const = 0;  ///< as `--task` takes it: "copy", "recall", …
  /// A batch of a size drawn as sample_into() draws it.
  virtual Sequence sample(Rng& rng, DType dtype = DType::f32) const;
  /// A batch of sequences of size `size`.
  virtual Sequence sample_size(Rng& rng, std::int64_t size, DType dtype = DType::f32) const;
  /// Draws a size (as sample() would) and fills `out` with a sequence of that size, reusing its buffers.
  virtual void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const = 0;
  /// Fills `out` with a batch of sequences of size `size`, reusing its buffers.
  virtual void sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype = DType::f32) const = 0;
  /// The batch of training step `step` (0-based): drawn from the Rng (every generated task), or a fixed
  /// function of the step and the run's seed (a data set read by epochs, models/data/fashion_mnist.hpp).
  virtual void sample_step_into(std::int64_t step, Rng& rng, Sequence& out, DType dtype = DType::f32) const {
    sample_into(rng, out, dtype);
  }
  virtual const char* size_name() const = 0;               ///< "length" or "items"
  /// The sizes sample_into() draws from, uniformly: {min, max}. sample_into(rng, out) is
  /// sample_size_into(rng, rng.uniform_int(min, max), out), which a curriculum narrows to {min, level}
  /// (models/training/trainer.hpp). {0, 0}: a task whose sizes a curriculum cannot grow.
  virtual std::pair<std::int64_t, std::int64_t> size_range() const { return {0, 0}; }
  /// The most time steps a sequence of this task can have, where sequences of one size differ in length
  /// (repeat_copy's repeats, keep_discard's sub-sequence lengths); 0: every size has one length, which the
  /// memory estimate extrapolates from two (models/training/trainer.hpp).
  virtual std::int64_t longest_steps() const { return 0; }
  /// The sizes the trainer's memory estimate measures a pass at (two, `first` and `second`) and the largest it
  /// extrapolates to (models/training/memory_estimate.hpp).
  struct MemoryProbes {
    std::int64_t first = 1, second = 1, largest = 1;  ///< sizes as sample_size_into() takes them
  };
  /// By default size_range()'s smallest, two more, and its largest; {1, 1, 1} for a task without a range of
  /// sizes (one frame layout whatever it draws).
  virtual MemoryProbes memory_probes() const {
    const auto [smallest, largest] = size_range();
    return largest > 0 ? MemoryProbes{smallest, smallest + 2, largest} : MemoryProbes{};
  }
  virtual std::vector<std::int64_t> eval_sizes() const = 0;  ///< the sizes `matmem eval` reports by default
  virtual std::int64_t input_rows() const = 0;   ///< rows of an input frame
  virtual std::int64_t input_cols() const = 0;   ///< columns of an input frame
  virtual std::int64_t output_rows() const = 0;  ///< rows of a target
  virtual std::int64_t output_cols() const = 0;  ///< columns of a target
  virtual std::int64_t batch() const = 0;        ///< sequences per batch
  virtual TargetKind target_kind() const { return TargetKind::bits; }  ///< what its targets are
};

/// The three parts of a fixed set of examples: a data set's images (models/data/) or a graph's labelled nodes
/// (models/tasks/graph.hpp): train, validation, test.
enum class Split { train, validation, test };
const char* split_name(Split s);  ///< "train", "validation", "test"

/// A task whose data is a fixed set of examples in three parts: trained by epochs, evaluated on a whole part
/// (Trainer::evaluate, early stopping on the validation part: models/training/trainer.hpp).
class SplitTask : public Task {
 public:
  virtual std::int64_t split_size(Split s) const = 0;  ///< examples in part `s`
  /// Examples first..first+count−1 of part `s` (in its fixed order) as one batch of `count` sequences.
  virtual void split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                                DType dtype = DType::f32) const = 0;
  /// The examples one evaluation batch of part `s` holds when the config asks for `configured`: a graph's
  /// nodes are read together, so its parts are evaluated whole.
  virtual std::int64_t eval_batch(Split, std::int64_t configured) const { return configured; }
  virtual const char* example_name() const { return "examples"; }  ///< "images", "nodes"
  /// Training steps per pass over the train part.
  virtual std::int64_t steps_per_epoch() const { return split_size(Split::train) / batch(); }
};

/// The matrix copy task's sizes: r x c matrices, lengths min_length..max_length, B sequences a batch.
struct CopyTaskOptions {
  std::int64_t rows = 5, cols = 5, min_length = 1, max_length = 20, batch = 16;  ///< r, c, lengths, B
};

/// The matrix associative recall task's sizes: r x c matrices, n = item_matrices an item, k items.
struct RecallTaskOptions {
  /// r, c, n, the item counts k, B
  std::int64_t rows = 5, cols = 5, item_matrices = 2, min_items = 2, max_items = 10, batch = 16;
};

/// Matrix copy (see the file): a sequence of l random binary matrices, then their copy to be written.
class CopyTask : public Task {
 public:
  /// A copy task of these sizes.
  explicit CopyTask(CopyTaskOptions o);
  const char* name() const override { return "copy"; }  ///< "copy"
  /// Draws l from {min_length..max_length} and a batch of sequences of that length.
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  /// A batch of sequences of `length` matrices.
  void sample_size_into(Rng& rng, std::int64_t length, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "length"; }  ///< "length"
  /// {min_length, max_length}.
  std::pair<std::int64_t, std::int64_t> size_range() const override { return {o_.min_length, o_.max_length}; }
  /// Lengths 10, 20, …, 100.
  std::vector<std::int64_t> eval_sizes() const override { return {10, 20, 30, 40, 50, 60, 70, 80, 90, 100}; }
  std::int64_t input_rows() const override { return o_.rows + 1; }  ///< r + 1: the delimiter row
  std::int64_t input_cols() const override { return o_.cols; }      ///< c
  std::int64_t output_rows() const override { return o_.rows; }     ///< r
  std::int64_t output_cols() const override { return o_.cols; }     ///< c
  std::int64_t batch() const override { return o_.batch; }          ///< B
  const CopyTaskOptions& options() const { return o_; }             ///< its sizes

 private:
  CopyTaskOptions o_;
};

/// Matrix associative recall (see the file): k items of n matrices, a query item, and the item after it
/// to be written.
class RecallTask : public Task {
 public:
  /// A recall task of these sizes.
  explicit RecallTask(RecallTaskOptions o);
  const char* name() const override { return "recall"; }  ///< "recall"
  /// Draws k from {min_items..max_items} and a batch of sequences of k items.
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  /// A batch of sequences of `items` items.
  void sample_size_into(Rng& rng, std::int64_t items, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "items"; }  ///< "items"
  /// {min_items, max_items}.
  std::pair<std::int64_t, std::int64_t> size_range() const override { return {o_.min_items, o_.max_items}; }
  /// Item counts 2, 4, …, 20.
  std::vector<std::int64_t> eval_sizes() const override { return {2, 4, 6, 8, 10, 12, 14, 16, 18, 20}; }
  std::int64_t input_rows() const override { return o_.rows + 2; }  ///< r + 2: the two delimiter rows
  std::int64_t input_cols() const override { return o_.cols; }      ///< c
  std::int64_t output_rows() const override { return o_.rows; }     ///< r
  std::int64_t output_cols() const override { return o_.cols; }     ///< c
  std::int64_t batch() const override { return o_.batch; }          ///< B
  const RecallTaskOptions& options() const { return o_; }           ///< its sizes

 private:
  RecallTaskOptions o_;
};

/// Bit errors of logits against a binary target, summed over elements and divided by the batch.
double bit_errors_per_sequence(const Tensor& logits, const Tensor& target);
/// The same, for logits of type T laid out as `target`.
template <class T>
double bit_errors_per_sequence(const T* logits, const Tensor& target);
/// Cross-entropy in bits of logits against a binary target, Σ (softplus(y) − y t)/ln 2 over the elements,
/// divided by the batch (TargetKind::probabilities).
double cross_entropy_bits_per_sequence(const Tensor& logits, const Tensor& target);
/// The same, for logits of type T laid out as `target`.
template <class T>
double cross_entropy_bits_per_sequence(const T* logits, const Tensor& target);
/// Rows whose largest logit is not at the target's largest entry (the first of equals), summed over every
/// row of every matrix and divided by the batch. A target row of zeros is no target (a graph's unlabelled
/// nodes, models/tasks/graph.hpp): it is skipped, and the division is by the sequences with a target row.
double class_errors_per_sequence(const Tensor& logits, const Tensor& target);
/// The same, for logits of type T laid out as `target`.
template <class T>
double class_errors_per_sequence(const T* logits, const Tensor& target);

}  // namespace matmem
