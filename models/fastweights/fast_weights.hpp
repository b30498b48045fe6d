// The fast-weights RNN (Ba, Hinton, Mnih, Leibo, Ionescu 2016, "Using Fast Weights to Attend to the Recent
// Past", §2–3; 004 §3.2, §7) and its baseline, the IRNN (Le, Jaitly, Hinton 2015), as matrix models in the DSL.
// The vector models are the case rows = 1 (H_t = h_tᵀ, a 1×n row).
//
// IRNN:  H_t = ReLU(Uᵀ H_{t−1} V + mat_x(X_t) + B),  U = I, V = s·I at first (irnn.init_scale s = 1: the
//        identity recurrence of Le et al.), input terms Glorot, B = 0.  Y_t = mat(H_t) (logits).
//
// Fast weights (fw.lambda λ, fw.eta η, fw.inner_steps S):
//   Z_t  = Uᵀ H_{t−1} V + mat_x(X_t) + B          the slow part, U = I, V = s·I at first (fw.init_scale s)
//   H⁰   = ReLU(Z_t)
//   Hˢ⁺¹ = ReLU(N(Z_t + A_{t−1}(Hˢ))),  s = 0 … S−1;   H_t = Hˢ
//   A_{t−1}(H) = η Σ_{τ<t} λ^{t−1−τ} ⟨H_τ, H⟩_F H_τ
// A_{t−1} is the fast-weight matrix of the hidden states before step t, A_{t−1} = λ A_{t−2} + η vec(H_{t−1})
// vec(H_{t−1})ᵀ, A_{−1} = 0, applied to vec(H): for rows = 1 it is Ba et al.'s A(t) = λA(t−1) + η h(t)h(t)ᵀ and
// A h = η Σ_τ λ^{t−1−τ} h_τ (h_τᵀ h) (004 §3.2). It is never formed: A(H) is computed from the kept past
// states H_τ of the sequence (⟨·,·⟩_F by ops/frobenius.hpp), t inner products a step, as Ba et al. note
// ("no need to store the fast weights matrix"); for rows·cols = n that is O(t·n) per inner step instead of n².
// N is layer normalisation over the matrix with a learned gain G (1 at first) and bias Bₙ (0):
// N(Z) = G ⊙ LN(Z) + Bₙ. Where it goes (fw.layer_norm):
//   "sum"  (default, Ba et al. eq. 2): N over Z_t + A(Hˢ), as above;
//   "slow" (004 §7): Hˢ⁺¹ = ReLU(N(Z_t) + A(Hˢ)), only the slow part normalised;
//   "none": Hˢ⁺¹ = ReLU(Z_t + A(Hˢ)).
// Parameters: <name>/slow/h/U, …/h/V, …/x/U, …/x/V, …/B; <name>/ln/G, <name>/ln/B; <name>/out/….
#pragma once
#include <string>
#include <vector>

#include "models/core/model.hpp"

namespace matmem {

struct FastWeightsConfig {
  std::int64_t rows = 1, cols = 50;  // the hidden state H
  bool fast = true;                  // false: the IRNN
  double lambda = 0.95, eta = 0.5, init_scale = 0.05;
  int inner_steps = 1;
  enum class Norm { sum, slow, none } norm = Norm::sum;
  std::int64_t input_rows = 1, input_cols = 37, output_rows = 1, output_cols = 10;
};

class FastWeightsRNN : public Model {
 public:
  FastWeightsRNN(const FastWeightsConfig& config, DType dtype, std::uint64_t seed, std::string name = "");
  void step(Step& s) override;
  const FastWeightsConfig& config() const { return config_; }

 private:
  Var slow(Step& s, Var h, Var x) const;    // Z_t
  Var fast(Var h, std::int64_t t) const;    // A_{t−1}(H), from past_
  Var norm(Step& s, Var z) const;           // N

  FastWeightsConfig config_;
  std::string slow_, ln_, out_;
  // The hidden states H_0 … H_{t−1} of the sequence being unrolled (cleared at step 0), on its tape.
  std::vector<Var> past_;
};

}  // namespace matmem
