// Dynamic N-grams (Graves, Wayne, Danihelka 2014, "Neural Turing Machines", arXiv 1410.5401 §4.4; spec/models.md
// "Tasks"), the paper's one-bit form: predict the next bit of a sequence drawn from a 6-gram model that is new
// for every sequence.
//   Per sequence, a table of 2^(N−1) = 32 probabilities, one per five-bit context, each drawn from Beta(½, ½):
//   p = sin²(πU/2), U ~ U[0,1) (Beta(½, ½) is the arcsine law, whose CDF (2/π) arcsin √p inverts to it). Then
//   L = length bits b_0..b_{L−1}: the first five Bernoulli(½) (Graves et al.'s start: spec/graves_ntm.md §2),
//   then b_t ~ Bernoulli(p[ctx_t]), ctx_t = (b_{t−5} … b_{t−1}) read as a binary number, b_{t−1} the lowest bit.
//   Frames are 1×1: the input at step t is b_{t−1} (0 at step 0), its target b_t; L steps, L targets.
//   Draws, sequence after sequence: its 32 uniforms, then its L uniforms (b_t = [U < p]).
// Loss: the BCE of sigmoid(logit) against the bit (TargetKind::probabilities); cost: the cross-entropy in bits
// per sequence, Σ_t −log₂ P(b_t), P(b_t = 1) = sigmoid(logit_t), mean over the batch.
// The optimal predictor given the counts N₀, N₁ of zeros and ones seen so far after the context (Beta(½, ½)
// prior): P(b_t = 1) = (N₁ + ½)/(N₀ + N₁ + 1), and ½ for the first five bits, which have no context (1 bit
// each). Its cross-entropy in bits, Σ_t −log₂ of its probability of b_t, is the floor the model's cost is
// compared with; the generator sets it per sequence in Sequence::optimal_cost, and `matmem eval` prints its
// batch mean beside the model's.
// Size: the sequence length L ("bits"); training draws L = length (200, the paper's).
#pragma once
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

/// The dynamic N-gram task's sizes: n-gram order N (contexts of N−1 bits), bits a sequence, B sequences.
struct NgramOptions {
  std::int64_t order = 6, length = 200, batch = 16;
};

/// Dynamic N-grams (see the file).
class NgramTask : public Task {
 public:
  /// An N-gram task of these sizes.
  explicit NgramTask(NgramOptions o);
  const char* name() const override { return "ngrams"; }  ///< "ngrams"
  /// A batch of `length` bits.
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  /// A batch of `bits` bits from fresh tables.
  void sample_size_into(Rng& rng, std::int64_t bits, Sequence& out, DType dtype = DType::f32) const override;
  /// The frames of the batch whose bits are `bits` (bits[b] sequence b's, all of one length) and their
  /// optimal cost (see the file).
  void write(const std::vector<std::vector<int>>& bits, Sequence& out, DType dtype = DType::f32) const;
  /// The optimal predictor's cross-entropy in bits of one sequence of bits under contexts of `context_bits` bits.
  static double optimal_cost(const std::vector<int>& bits, std::int64_t context_bits);
  const char* size_name() const override { return "bits"; }  ///< "bits"
  /// {length, length}: training draws one size.
  std::pair<std::int64_t, std::int64_t> size_range() const override { return {o_.length, o_.length}; }
  /// 50, 100, 200, 400, 800 bits.
  std::vector<std::int64_t> eval_sizes() const override { return {50, 100, 200, 400, 800}; }
  std::int64_t input_rows() const override { return 1; }   ///< 1
  std::int64_t input_cols() const override { return 1; }   ///< 1
  std::int64_t output_rows() const override { return 1; }  ///< 1
  std::int64_t output_cols() const override { return 1; }  ///< 1
  std::int64_t batch() const override { return o_.batch; }  ///< B
  TargetKind target_kind() const override { return TargetKind::probabilities; }  ///< probabilities
  const NgramOptions& options() const { return o_; }         ///< its sizes

 private:
  NgramOptions o_;
};

}  // namespace matmem
