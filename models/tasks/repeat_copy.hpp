// Matrix repeat copy (Graves, Wayne, Danihelka 2014, "Neural Turing Machines", arXiv 1410.5401 §4.2; spec/models.md
// "Tasks"): a sequence of random binary matrices, then the number of times to copy it; the target is the
// sequence that many times in a row, then an end marker.
//   l ~ U{min_length..max_length} matrices X_1..X_l ∈ {0,1}^{r×c}, Bernoulli(½), and a repeat count
//   n ~ U{min_repeats..max_repeats}; one (l, n) per batch (its sequences share their frame count, as copy's l).
//   Input frames are (r+2)×c: rows 0..r−1 the content, row r the delimiter channel, row r+1 the repeat channel.
//   Steps 0..l−1 carry X_1..X_l (rows r, r+1 zero). Step l is the delimiter frame: content 0, row r all 1, row
//   r+1 all ñ, the count normalised over the training range to mean 0 and variance 1 (the paper's
//   normalisation; the range's distribution is U{min..max}):
//       ñ = (n − μ)/σ,  μ = (min_repeats + max_repeats)/2,  σ² = ((max_repeats − min_repeats + 1)² − 1)/12
//   (σ = 1 when the range is one count). The paper puts the count on its own channel after the sequence; here
//   it shares its frame with copy's delimiter, so the step is marked whatever ñ is (ñ can be 0).
//   Steps l+1..l+nl+1 are blank and are the target steps. Output frames are (r+1)×c: rows 0..r−1 the content,
//   row r the end-marker channel. The target at step l+1+k (k = 0..nl−1) is X_{(k mod l)+1} with row r 0; the
//   target at the last step, l+nl+1, is the end marker: content 0, row r all 1.  l + nl + 2 steps in all,
//   nl + 1 targets. Loss and cost as copy's (TargetKind::bits), over every element of the (r+1)×c targets.
// Size: a batch's length l (size_by = "length", the default) or its repeat count n (size_by = "repeats"); the
// other is drawn from its range, or held at fixed_size when that is > 0 (`matmem eval --set task.fixed_size=10`
// evaluates over lengths with the repeats fixed at 10; models/README.md).
#pragma once
#include <algorithm>
#include <string>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

/// The repeat copy task's sizes: r x c matrices, lengths, repeat counts (their range also normalises the
/// count), B sequences a batch, and what a size means.
struct RepeatCopyOptions {
  std::int64_t rows = 5, cols = 5, min_length = 1, max_length = 10, min_repeats = 1, max_repeats = 10, batch = 16;
  std::string size_by = "length";  ///< "length" or "repeats": the dimension sample_size_into() sets
  std::int64_t fixed_size = 0;     ///< > 0: the other dimension is held at this; 0: drawn from its range
};

/// Matrix repeat copy (see the file).
class RepeatCopyTask : public Task {
 public:
  /// A repeat copy task of these sizes.
  explicit RepeatCopyTask(RepeatCopyOptions o);
  const char* name() const override { return "repeat_copy"; }  ///< "repeat_copy"
  /// Draws l and n from their ranges and a batch of sequences of l matrices repeated n times.
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  /// A batch whose length (size_by = "length") or repeat count (size_by = "repeats") is `size`.
  void sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype = DType::f32) const override;
  /// Draws the B·l matrices in the physical order of each [B,r,c] matrix and lays the batch out (write()).
  void sample_length_repeats(Rng& rng, std::int64_t length, std::int64_t repeats, Sequence& out,
                             DType dtype = DType::f32) const;
  /// The frames of the batch whose matrices are `x` (l of [B,r,c]) repeated `repeats` times (see the file).
  void write(const std::vector<Tensor>& x, std::int64_t repeats, Sequence& out, DType dtype = DType::f32) const;
  /// ñ, the count normalised over the training range (see the file).
  double normalised_repeats(std::int64_t repeats) const;
  const char* size_name() const override { return o_.size_by == "repeats" ? "repeats" : "length"; }
  /// The range of the dimension a size is.
  std::pair<std::int64_t, std::int64_t> size_range() const override;
  /// l + nl + 2 at the longest length and the most repeats (fixed_size included where it is larger).
  std::int64_t longest_steps() const override {
    const bool by_length = o_.size_by == "length";
    const std::int64_t l = std::max(o_.max_length, by_length ? 0 : o_.fixed_size),
                       n = std::max(o_.max_repeats, by_length ? o_.fixed_size : 0);
    return l + n * l + 2;
  }
  /// Lengths 5, 10, …, 40 or repeat counts 5, 10, …, 40.
  std::vector<std::int64_t> eval_sizes() const override { return {5, 10, 15, 20, 25, 30, 35, 40}; }
  std::int64_t input_rows() const override { return o_.rows + 2; }  ///< r + 2: the delimiter and repeat rows
  std::int64_t input_cols() const override { return o_.cols; }      ///< c
  std::int64_t output_rows() const override { return o_.rows + 1; }  ///< r + 1: the end-marker row
  std::int64_t output_cols() const override { return o_.cols; }      ///< c
  std::int64_t batch() const override { return o_.batch; }           ///< B
  const RepeatCopyOptions& options() const { return o_; }             ///< its sizes

 private:
  RepeatCopyOptions o_;
};

}  // namespace matmem
