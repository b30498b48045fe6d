// Keep or discard: a task where freeing memory is the point (the DNC's free gates and usage-based allocation,
// spec/dnc.md §4). A sequence of sub-sequences of random binary matrices, each marked keep or discard; a discard
// sub-sequence is copied back right after its delimiter and is then of no more use, the keep ones are all copied
// back at the end. A memory that frees the slots of a recalled discard sub-sequence holds everything it needs;
// one that overwrites its slots in a cycle has lost the first keep frames by the end. Measured
// (models/results/dnc.md): a model may also never write the discard sub-sequences, recalling each from its
// controller's state right after its delimiter, and need no freeing; at these sizes a discard sub-sequence does
// not outlast a 15×15 controller.
//   n sub-sequences (n ~ U{min_subsequences..max_subsequences}, the size), `keep` of them keep (min(keep, n) when
//   a size n < keep is asked for), the others discard: with keep_first the first sub-sequence is keep and the
//   other keep−1 are drawn uniformly among sub-sequences 2..n, else all `keep` are drawn uniformly among 1..n.
//   Sub-sequence j has l_j ~ U{min_subsequence_length..max_subsequence_length} matrices X_{j,1..l_j} ∈
//   {0,1}^{r×c}, Bernoulli(½). The pattern (n, which are keep, every l_j) is drawn once per batch, so its
//   sequences share their frame count (as copy's l); the matrices are each sequence's own.
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
//   keep frames  ≤ keep · max_subsequence_length                 ≤ S/2  (defaults 2 · 4 = 8)
//   one discard  ≤ max_subsequence_length                        ≤ S/2  (4); keep frames + one discard ≤ S (12)
//   frames in all ≥ min_subsequences · min_subsequence_length    > S    (6 · 3 = 18)
// so the keep frames and the discard sub-sequence being recalled always fit in S slots, while the matrices
// written from the first keep frame on (all of them, with keep_first) do not: a cycle over S slots has written
// over the first keep frame by the recall delimiter, a memory that frees each discard once recalled has not.
// Size: the number n of sub-sequences ("subsequences"); with keep fixed, a larger n adds discard sub-sequences,
// so `matmem eval --sizes 6,8,12,16` asks for more freeing at the same keep load.
#pragma once
#include <vector>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

/// The keep/discard task's sizes (see the file): r x c matrices, sub-sequence counts, how many are keep, their
/// lengths, B sequences a batch. The defaults meet the file's relations for 16 slots.
struct KeepDiscardOptions {
  std::int64_t rows = 5, cols = 5, min_subsequences = 6, max_subsequences = 8, keep = 2;
  std::int64_t min_subsequence_length = 3, max_subsequence_length = 4, batch = 16;
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
  /// 2 Σ l_j + n + 1 at n = max_subsequences sub-sequences of max_subsequence_length matrices.
  std::int64_t longest_steps() const override {
    return (2 * o_.max_subsequence_length + 1) * o_.max_subsequences + 1;
  }
  /// Sub-sequence counts 4, 6, 8, 10, 12, 16: below, at and beyond the training range.
  std::vector<std::int64_t> eval_sizes() const override { return {4, 6, 8, 10, 12, 16}; }
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
