// Matrix priority sort (Graves, Wayne, Danihelka 2014, "Neural Turing Machines", arXiv 1410.5401 §4.5;
// spec/models.md "Tasks"): random binary matrices, each with a priority; the target is the highest-priority
// ones in descending order of priority.
//   m = inputs matrices X_1..X_m ∈ {0,1}^{r×c}, Bernoulli(½), each with a priority p_i ~ U[−1, 1); each
//   sequence of the batch draws its own. Input frames are (r+2)×c: rows 0..r−1 the content, row r the priority
//   channel, row r+1 the delimiter channel. Steps 0..m−1 carry X_i with row r all p_i (row r+1 0); step m is
//   the delimiter (content and row r 0, row r+1 all 1; the paper's figure shows the outputs after the inputs,
//   and a delimiter marks where, as in copy); steps m+1..m+k are blank and their targets are the k
//   highest-priority matrices, highest first: the target at step m+1+q is X_{π(q)}, π the input order sorted
//   by descending priority (equal priorities, which U[−1,1) makes unlikely, in input order).
//   m + 1 + k steps in all. Outputs r×c; loss and cost as copy's (TargetKind::bits).
// The paper's sizes: m = 20 inputs, k = 16 outputs. Size: the number of inputs m (training draws m = inputs);
// a batch of m inputs writes k(m) = max(1, round(m · outputs / inputs)) matrices, so `matmem eval` over the
// number of inputs keeps the share of the inputs written (16 of 20, 32 of 40).
#pragma once
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

/// The priority sort task's sizes: r x c matrices, `inputs` of them, the `outputs` highest written.
struct PrioritySortOptions {
  std::int64_t rows = 5, cols = 5, inputs = 20, outputs = 16, batch = 16;
};

/// Matrix priority sort (see the file).
class PrioritySortTask : public Task {
 public:
  /// A priority sort task of these sizes.
  explicit PrioritySortTask(PrioritySortOptions o);
  const char* name() const override { return "priority_sort"; }  ///< "priority_sort"
  /// A batch of `inputs` matrices.
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  /// A batch of `m` matrices, writing k(m) of them (see the file): per sequence, its m·r·c bits in the order
  /// (matrix, row, column), then its m priorities.
  void sample_size_into(Rng& rng, std::int64_t m, Sequence& out, DType dtype = DType::f32) const override;
  /// The frames of the batch whose matrices are `x` (m of [B,r,c]) with priorities `priority` (priority[i·B +
  /// b] that of sequence b's matrix i), writing the `k` highest (see the file).
  void write(const std::vector<Tensor>& x, const std::vector<double>& priority, std::int64_t k, Sequence& out,
             DType dtype = DType::f32) const;
  /// k(m): the matrices a batch of m inputs writes.
  std::int64_t outputs_for(std::int64_t m) const;
  const char* size_name() const override { return "inputs"; }  ///< "inputs"
  /// {inputs, inputs}: training draws one size.
  std::pair<std::int64_t, std::int64_t> size_range() const override { return {o_.inputs, o_.inputs}; }
  /// 5, 10, …, 40 inputs.
  std::vector<std::int64_t> eval_sizes() const override { return {5, 10, 15, 20, 25, 30, 35, 40}; }
  std::int64_t input_rows() const override { return o_.rows + 2; }  ///< r + 2: the priority and delimiter rows
  std::int64_t input_cols() const override { return o_.cols; }      ///< c
  std::int64_t output_rows() const override { return o_.rows; }     ///< r
  std::int64_t output_cols() const override { return o_.cols; }     ///< c
  std::int64_t batch() const override { return o_.batch; }          ///< B
  const PrioritySortOptions& options() const { return o_; }         ///< its sizes

 private:
  PrioritySortOptions o_;
};

}  // namespace matmem
