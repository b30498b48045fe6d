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
// A h = η Σ_τ λ^{t−1−τ} h_τ (h_τᵀ h) (004 §3.2). Two forms compute the same A_{t−1}(H) (fw.form):
//   "sum":    A never formed, A(H) from the kept past states H_τ of the sequence (⟨·,·⟩_F by
//             ops/frobenius.hpp), as Ba et al. note ("no need to store the fast weights matrix"): per inner
//             step t Frobenius products and t scaled adds, about 2·t·n multiply-adds (n = rows·cols) and 3t
//             tape nodes;
//   "matrix": A_{t−1} kept as an n×n matrix per sequence, a recurrent state <name> "A", zero at t = 0, updated
//             once a time step, A_t = λ A_{t−1} + η vec(H_t) vec(H_t)ᵀ (ops/fast_weight_matrix.hpp: vec_outer),
//             and applied as vec(A_{t−1}(H)) = A_{t−1} vec(H) (vec_matvec): about 2n² per inner step and 3n²
//             per time step for the update, whatever t;
//   "auto" (default): the cheaper by a cost model per time step, each op charged k = 30 multiply-adds for the
//             tape's fixed work besides its arithmetic: "matrix" when
//               S·(2n² + k) + 3n² + 3k  <  S·t̄·(2n + 3k),
//             t̄ = (T − 1)/2 the mean number of past states over a sequence of T steps
//             (FastWeightsConfig::typical_steps, set by the registry from the task's sequences; 0, unknown:
//             "sum"). k was fitted to measured crossovers (models/README.md); with arithmetic alone (k = 0) the
//             rule would give the matrix form up to n = 2S·t̄/(2S + 3), measured to be ~3 times too small.
//             The two forms agree to rounding (a test checks loss and gradients).
// Learned λ and η (fw.learn_lambda, fw.learn_eta; off by default, then λ and η are constants): unconstrained
// parameters kept in range by construction, each [1,1] and shared by the layer, initialised at the
// configured values:
//   λ = σ(θ_λ) ∈ (0, 1)     (<name>/fast/lambda_logit, θ_λ = log(λ₀/(1 − λ₀)); needs 0 < fw.lambda < 1)
//   η = softplus(θ_η) > 0   (<name>/fast/eta_raw, θ_η = log(e^{η₀} − 1); needs fw.eta > 0)
// λ^m is computed as exp(−m·softplus(−θ_λ)) (log σ(θ) = −softplus(−θ)), so no power of a Var is needed.
// N is layer normalisation over the matrix with a learned gain G (1 at first) and bias Bₙ (0):
// N(Z) = G ⊙ LN(Z) + Bₙ. Where it goes (fw.layer_norm):
//   "sum"  (default, Ba et al. eq. 2): N over Z_t + A(Hˢ), as above;
//   "slow" (004 §7): Hˢ⁺¹ = ReLU(N(Z_t) + A(Hˢ)), only the slow part normalised;
//   "none": Hˢ⁺¹ = ReLU(Z_t + A(Hˢ)).
// The input map mat_x(X) = Σ_{i<k} U_{x,i}ᵀ X V_{x,i}, k = fw.input_terms, r by default (parameters
// <name>/slow/x, x1, …, x{k−1}): with one term, U_xᵀ X V_x of a 1×c' input frame is u ⊗ (X V_x), every row of
// the state a scaled copy of one c-vector code of the symbol, and a matrix state (r > 1) fed so does not learn
// associative retrieval (models/results/retrieval.md, "Matrix fast weights"); with r terms the map reaches every linear
// map of X into the state. The output Y = Σ_{i<k} U_{o,i}ᵀ H V_{o,i} + B_o, k = fw.output_terms, 1 by default
// (<name>/out/h, h1, …). fw.layer_norm_over = rows: N normalises each row (LayerNormOver::rows).
// Parameters: <name>/slow/h/U, …/h/V, …/x/U, …/x/V, …/B; <name>/ln/G, <name>/ln/B; <name>/out/…; learned
// λ and η: <name>/fast/lambda_logit, <name>/fast/eta_raw.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "matmem/models/core/model.hpp"

namespace matmem {

struct FastWeightsConfig {
  std::int64_t rows = 1, cols = 50;  // the hidden state H
  bool fast = true;                  // false: the IRNN
  double lambda = 0.95, eta = 0.5, init_scale = 0.05;
  int inner_steps = 1;
  enum class Norm { sum, slow, none } norm = Norm::sum;
  bool learn_lambda = false, learn_eta = false;
  enum class Form { automatic, sum, matrix } form = Form::automatic;
  std::int64_t typical_steps = 0;  // T, the sequence length "auto" chooses the form for (0: unknown, "sum")
  // The input and output maps' bilinear terms (fw.input_terms, fw.output_terms): k terms Σ_i U_iᵀ X V_i reach
  // every linear map of X into the r×c state once k ≥ r (and of vec(H) to the output once k ≥ r), where one
  // term gives every row of the state the same c-vector code of the input, scaled. input_terms 0 (the
  // default): r terms, so the vector model (r = 1) keeps its one; output_terms 1.
  std::int64_t input_terms = 0, output_terms = 1;
  bool norm_rows = false;  // fw.layer_norm_over = rows: N normalises each row of the state, not the whole matrix
  std::int64_t input_rows = 1, input_cols = 37, output_rows = 1, output_cols = 10;
};

class FastWeightsRNN : public Model {
 public:
  FastWeightsRNN(const FastWeightsConfig& config, DType dtype, std::uint64_t seed, std::string name = "");
  void step(Step& s) override;
  const FastWeightsConfig& config() const { return config_; }
  bool matrix_form() const { return matrix_; }  // the form "auto" chose, or the one asked for
  // The learned λ and η (those learned), by name <name>/fast/lambda and <name>/fast/eta.
  std::vector<std::pair<std::string, double>> learned_scalars() const override;

 private:
  Var slow(Step& s, Var h, Var x);          // Z_t
  Var read(Step& s, Var h);                 // Y_t
  // The coefficients η λ^{t−1−τ} of the past states τ = 0 … t−1 into coef_, as Vars when λ or η is learned.
  void coefficients(Step& s, std::int64_t t);
  Var fast(Var h, std::int64_t t) const;    // A_{t−1}(H), from past_ and coef_ ("sum")
  Var lambda(Step& s) const;                // λ as a [1,1] Var (learned only)
  Var eta(Step& s) const;                   // η as a [1,1] Var (learned only)
  Var norm(Step& s, Var z) const;           // N

  FastWeightsConfig config_;
  std::string slow_, ln_, out_, fast_;
  bool matrix_ = false;
  // The hidden states H_0 … H_{t−1} of the sequence being unrolled (cleared at step 0), on its tape.
  std::vector<Var> past_;
  // Reused each step, so that a step allocates nothing once the first sequence has grown them: the terms' names
  // ("x", "x1", …; "h", "h1", …), the terms of the input and output maps, and the coefficients of past_.
  std::vector<std::string> input_names_, output_names_;
  std::vector<MatTerm> input_terms_;
  std::vector<NamedTerm> output_terms_;
  std::vector<Var> coef_;
};

}  // namespace matmem
