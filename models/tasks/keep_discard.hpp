// Keep or discard: a task where freeing memory is the point (the DNC's free gates and usage-based allocation,
// spec/dnc.md §4). A sequence of sub-sequences of random binary matrices, each marked keep or discard; a discard
// sub-sequence is copied back right after its delimiter and is then of no more use, the keep ones are all copied
// back at the end. A memory that frees the slots of a recalled discard sub-sequence holds everything it needs;
// one that overwrites its slots in a cycle has lost the first keep frames by the end.
//   n sub-sequences (n ~ U{min_subsequences..max_subsequences}, the size), `keep` of them keep (min(keep, n) when
//   a size n < keep is asked for), the others discard: with keep_first the first sub-sequence is keep and the
//   other keep−1 are drawn uniformly among sub-sequences 2..n, else all `keep` are drawn uniformly among 1..n.
//   A keep sub-sequence j has l_j ~ U{min_keep_length..max_keep_length} matrices, a discard one
//   l_j ~ U{min_discard_length..max_discard_length}; its matrices X_{j,1..l_j} ∈ {0,1}^{r×c}, Bernoulli(½). The
//   pattern (n, which are keep, every l_j) is drawn once per batch, so its sequences share their frame count (as
//   copy's l); the matrices are each sequence's own.
//   Input frames are (r+3)×c: rows 0..r−1 the content, row r the keep flag, row r+1 the delimiter channel, row
//   r+2 the recall channel. For j = 1..n in order:
//     l_j frames carrying X_{j,1..l_j}, row r all k_j (1 keep, 0 discard), rows r+1, r+2 zero;
//     the delimiter: content 0, row r all k_j, row r+1 all 1;
//     discard only: l_j blank frames whose targets are X_{j,1..l_j}.
//   Then the recall delimiter (row r+2 all 1, all else 0), then Σ_keep l_j blank frames whose targets are the keep
//   sub-sequences' matrices, sub-sequence by sub-sequence in the order they came.
//   2 Σ_j l_j + n + 1 steps in all, Σ_j l_j targets: every matrix is written back once. Output frames are r×c (no
//   end marker); only the target steps are scored (Sequence::target_steps, no lane mask), by TargetKind::bits:
//   the loss the BCE over every element of the targets, the cost the bit errors per sequence, as copy's.
// Sizes against a memory of S slots, one matrix a slot (S = 16, DeepMind's DNC, spec/dnc.md §9):
//   keep frames + one discard ≤ keep · max_keep_length + max_discard_length                    ≤ S  (2·3 + 8 = 14)
//   frames in all ≥ keep · min_keep_length + (min_subsequences − keep) · min_discard_length   > S  (2·2 + 3·6 = 22)
//   a discard ≥ min_discard_length, more matrices than the controller holds in its state       (6)
// so the keep frames and the discard sub-sequence being recalled always fit in S slots, while the matrices
// written from the first keep frame on (all of them, with keep_first) do not: a cycle over S slots has written
// over the first keep frame by the recall delimiter, a memory that frees each discard once recalled has not.
// The last relation makes the discards go through memory: with discards of 3–4 matrices a 2×15×15 MatRNN
// controller recalls them from its state and writes only the keep ones, needing no freeing; the MatRNN alone
// copies 3–4 matrices but not 6–8 (measured, models/results/dnc.md).
// Size: the number n of sub-sequences ("subsequences"); with keep fixed, a larger n adds discard sub-sequences,
// so `matmem eval --sizes 5,7,10,14` asks for more freeing at the same keep load.
#pragma once
#include <algorithm>
#include <vector>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

/// The keep/discard task's sizes (see the file): r x c matrices, sub-sequence counts, how many are keep, the
/// keep and the discard sub-sequences' lengths, B sequences a batch. The defaults meet the file's relations for 16 slots.
struct KeepDiscardOptions {
  std::int64_t rows = 5, cols = 5, min_subsequences = 5, max_subsequences = 7, keep = 2;
  std::int64_t min_keep_length = 2, max_keep_length = 3;        ///< matrices a keep sub-sequence
  std::int64_t min_discard_length = 6, max_discard_length = 8;  ///< matrices a discard sub-sequence
  std::int64_t batch = 16;
  bool keep_first = true;  ///< the first sub-sequence is always keep (else the keep ones are anywhere)
};

/// Keep or discard (see the file).
class KeepDiscardTask : public Task {
 public:
  /// A keep/discard task of these sizes; throws Error naming the config key (task.keep, …) of a bad size.
  explicit KeepDiscardTask(KeepDiscardOptions o);
  const char* name() const override { return "keep_discard"; }  ///< "keep_discard"
  /// Draws n from {min_subsequences..max_subsequences} and a batch of n sub-sequences.
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  /// A batch of `subsequences` sub-sequences (≥ 1; all keep when fewer than `keep`).
  void sample_size_into(Rng& rng, std::int64_t subsequences, Sequence& out, DType dtype = DType::f32) const override;
  /// The frames of the batch whose sub-sequences are `x` (x[j] its l_j matrices, each [B,r,c]) and whose flags
  /// are `keep` (keep[j]: sub-sequence j is keep), laid out as the file says.
  void write(const std::vector<std::vector<Tensor>>& x, const std::vector<bool>& keep, Sequence& out,
             DType dtype = DType::f32) const;
  const char* size_name() const override { return "subsequences"; }  ///< "subsequences"
  /// {min_subsequences, max_subsequences}.
  std::pair<std::int64_t, std::int64_t> size_range() const override {
    return {o_.min_subsequences, o_.max_subsequences};
  }
  /// 2 Σ l_j + n + 1 at n = max_subsequences sub-sequences, each of its kind's most matrices.
  std::int64_t longest_steps() const override {
    const std::int64_t keep = std::min(o_.keep, o_.max_subsequences);
    return (2 * o_.max_keep_length + 1) * keep + (2 * o_.max_discard_length + 1) * (o_.max_subsequences - keep) + 1;
  }
  /// Sub-sequence counts 3, 5, 7, 10, 14: below, at and beyond the training range.
  std::vector<std::int64_t> eval_sizes() const override { return {3, 5, 7, 10, 14}; }
  std::int64_t input_rows() const override { return o_.rows + 3; }  ///< r + 3: the keep, delimiter and recall rows
  std::int64_t input_cols() const override { return o_.cols; }      ///< c
  std::int64_t output_rows() const override { return o_.rows; }     ///< r
  std::int64_t output_cols() const override { return o_.cols; }     ///< c
  std::int64_t batch() const override { return o_.batch; }          ///< B
  const KeepDiscardOptions& options() const { return o_; }           ///< its sizes

 private:
  KeepDiscardOptions o_;
};

}  // namespace matmem
