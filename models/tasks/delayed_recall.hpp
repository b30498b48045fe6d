// Delayed recall, the task of the gamma family's memory depth (003 §2: a memory of depth D holds the
// input's last D or so steps): output the input of d steps ago.
//   l ~ U{min_length..max_length} (one l per batch); d + l frames X_0 … X_{d+l−1} ∈ {0,1}^{r×c}, Bernoulli(½)
//   each, no delimiter; the target at step t = d … d+l−1 is X_{t−d}. d + l steps in all, l targets.
// A gamma memory of K taps has depth K/μ (003): the delay the task needs, d, can be set against the learned μ
// (μ ≈ K/d); with μ = 1 (the tap delay line) K ≥ d taps hold X_{t−d} exactly. Size: the number l of recalled
// frames ("length"). Cost: bit errors per sequence, as for copy.
#pragma once
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

struct DelayedRecallOptions {
  std::int64_t rows = 5, cols = 5, delay = 5, min_length = 1, max_length = 20, batch = 16;
};

class DelayedRecallTask : public Task {
 public:
  explicit DelayedRecallTask(DelayedRecallOptions o);
  const char* name() const override { return "delay"; }
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t length, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "length"; }
  std::pair<std::int64_t, std::int64_t> size_range() const override { return {o_.min_length, o_.max_length}; }
  std::vector<std::int64_t> eval_sizes() const override { return {10, 20, 30, 40, 50, 60, 70, 80, 90, 100}; }
  std::int64_t input_rows() const override { return o_.rows; }
  std::int64_t input_cols() const override { return o_.cols; }
  std::int64_t output_rows() const override { return o_.rows; }
  std::int64_t output_cols() const override { return o_.cols; }
  std::int64_t batch() const override { return o_.batch; }
  const DelayedRecallOptions& options() const { return o_; }

 private:
  DelayedRecallOptions o_;
};

}  // namespace matmem
