// The Matrix Differentiable Neural Computer: Graves et al. 2016's DNC (Methods; spec/dnc.md) on a memory of
// matrix slots, its controller and interface as the MatNTM's (models/ntm/matntm.hpp). Where DeepMind's code
// [D] and the paper [N] differ, this follows [D]; [N]'s form is given beside it.
//
// Per time step t, with the memory M_{t−1} [B,N,r,c], usage u_{t−1}, precedence p_{t−1} [B,N], links
// L_{t−1} [B,N,N], the write weighting w^w_{t−1}, and per read head i its weighting w^{r,i}_{t−1} and read
// R^i_{t−1} [B,r,c]:
//  1. controller: H_t = controller(X_t, R_{t−1}^{1..R}), each read entering layer 1 through its own bilinear
//     term (a stack of MatLSTM, MatRNN or feed-forward layers: models/layers/cells.hpp); with `controller_clip`
//     c > 0 every layer's H (and an LSTM's C) is clipped to ±c in the forward pass, as [D] clips its LSTM.
//  2. interface, each part a mat(H_t) with its own bias ([D]: one biased linear per part; [N]: one W_ξ, no
//     bias): per read head K^{r,i} [r,c], β^{r,i} = softplus(mat(H)), free gate f^i = σ(mat(H)) [1], modes
//     π^i = softmax(mat(H)) [3]; the write head K^w [r,c], β^w = softplus(mat(H)), erase E = σ(mat(H)) [r,c],
//     write matrix A = mat(H) [r,c], allocation gate g^a = σ(mat(H)), write gate g^w = σ(mat(H)).
//     Strengths are softplus as [D] (in (0, ∞)); [N] has oneplus, 1 + softplus (in [1, ∞)).
//  3. usage: u_t = (u_{t−1} + w^w_{t−1} − u_{t−1} ⊙ w^w_{t−1}) ⊙ Π_i (1 − f^i w^{r,i}_{t−1}), no gradient to
//     w^w_{t−1} as [D] (dnc_usage; `usage_gradient = stop`, the default); [N] differentiates it (`full`: the
//     same values, composed of elementwise ops). The stop-gradient makes [D]'s gradient other than the loss's
//     own from the second step on, so a model gradcheck of more than one step checks `full`. With `free_gates`
//     false every f^i is 0 (an ablation: no slot is ever freed).
//  4. allocation: a[φ_j] = (1 − û[φ_j]) Π_{k<j} û[φ_k], û = ε + (1 − ε) u_t, φ the slots by ascending û
//     (dnc_allocation; the ε is [D]'s).
//  5. write weighting: c^w = softmax(β^w cos(K^w, M_{t−1}(i))), w^w_t = g^w [g^a a + (1 − g^a) c^w].
//  6. write: M_t(i) = M_{t−1}(i) ⊙ (1 − w^w_t(i) E) + w^w_t(i) A (memory_write).
//  7. links: L_t[i,j] = (1 − w^w_t[i] − w^w_t[j]) L_{t−1}[i,j] + w^w_t[i] p_{t−1}[j], L_t[i,i] = 0; then
//     p_t = (1 − Σ_i w^w_t[i]) p_{t−1} + w^w_t (dnc_temporal_links).
//  8. read weightings: c^{r,i} = softmax(β^{r,i} cos(K^{r,i}, M_t(j))) on the written memory; forward
//     f^i = L_t w^{r,i}_{t−1}, backward b^i = L_tᵀ w^{r,i}_{t−1}; w^{r,i}_t = π^i[0] b^i + π^i[1] c^{r,i} +
//     π^i[2] f^i ([N]'s order of the modes; [D] orders them backward, forward, content). Its mass is
//     π^i[1] + π^i[0] Σb^i + π^i[2] Σf^i, and Σf^i, Σb^i ≤ Σw^{r,i}_{t−1} (L's rows and columns sum to at most 1),
//     so from w^{r,i}_0 = 0 a head whose modes leave content reads nothing, and the gradients that could bring
//     it back (π^i[1]'s through ⟨g, c⟩, the directions' through ⟨g, b⟩ and ⟨g, f⟩) vanish with what it reads:
//     priority sort's MatDNC runs sat there at ln 2 for thousands of steps (models/results/dnc.md). With
//     `read_fallback`, what the directions do not place goes to content: w^{r,i}_t = π^i[0] b^i + π^i[2] f^i +
//     (π^i[1] + π^i[0] (1 − Σb^i) + π^i[2] (1 − Σf^i)) c^{r,i}, a distribution at every step.
//  9. reads: R^i_t = Σ_j w^{r,i}_t(j) M_t(j) (memory_read).
// 10. Y_t = mat(H_t, R_t^{1..R}) (the logits, with a bias as [D]), clipped to ±c too when `clip_logits`.
// With `masked_lookup` (Csordás & Schmidhuber's masked lookup), every head also emits a mask
// μ = m₀ + (1 − m₀) σ(mat(H_t)) [r,c] (m₀ = `mask_floor`), and its content weighting compares K ⊙ μ with each
// M(i) ⊙ μ: c = softmax(β cos(K ⊙ μ, M(i) ⊙ μ)) in 5 and 8; the masks' maps come after the modes'. With
// `link_sharpness` (their sharpness control), 8's directions are sharpened before the modes mix them:
// f^i ← (f^i + ε)^{s} / Σ (f^i + ε)^{s} (ops' sharpen, ε = 1e-12), s = 1 + softplus(mat(H_t)) per head and
// direction (s_f, s_b; their maps after the masks'). With `deallocation` (their de-allocation), 6 writes on
// M_{t−1}(i) ψ_t(i), ψ_t = Π_i (1 − f^i w^{r,i}_{t−1}) the usage's retention (differentiated, whatever the
// usage's own gradient), so a freed slot's content goes with its usage and no key finds it; the write
// weighting's content part still looks at M_{t−1}. With `interface_norm` (Franke et al. 2018's rsDNC), the
// interface is layer-normalised as one vector before its parts' activations: with ξ every element of every
// part of 2 (the masks' and exponents' too) for one sample, m and v its mean and variance,
// ξ̂_k = γ_k ⊙ (ξ_k − m) / √(v + ε) + β_k, ε = 1e-6 as theirs, γ_k (start 1) and β_k (start 0) of part k's
// shape (ops' layer_norm_joint). All four, and `read_fallback` (step 8), off by default.
// cos is [D]'s: ⟨K, M(i)⟩_F / (|K| |M(i)| + ε), |x| = √(‖x‖_F² + ε), ε = `cosine_eps` (1e-6 as [D]), so a
// near-empty slot's gradient is bounded by 1/√ε rather than growing as 1/‖M(i)‖_F; `cosine_eps` 0 gives the
// MatNTM's form, exact norms and 1e-8 on their product ([N] states no ε).
// Initial state as [D]: everything zero and not learned: M_0, u_0, p_0, L_0, w^w_0, w^{r,i}_0, R_0 and the
// controller's states. A zero memory does not meet the zero-norm trap of cosine similarity (models/README.md,
// "Known traps"): M_0 is no function of the parameters, and cos(K, 0) = 0 has a zero gradient in K, which is
// what the op gives; from t = 1 every slot holds w^w_1(i) A ≠ 0, since the allocation and the softmax give
// every slot a positive weight. The symmetry of equal slots is broken by the allocation, which prefers the
// lowest slot among equal usages. An LSTM controller's forget gates start with bias 1, as [D]'s.
// Parameters: dnc/ctrl/l<k>/…, dnc/read<i>/{key,beta,free,modes[,mask][,sharp_forward,sharp_backward]}/…, dnc/write/{key,beta,erase,add,
// allocation,gate[,mask]}/…, dnc/out/…; with interface_norm each part's <part>/norm/{gain,bias}.
// Exposed per step (Step::expose; `matmem inspect` draws the weightings and the memory): read<i>/weighting
// and write1/weighting [B,N], memory [B,N,r,c] (M_t), usage, allocation, precedence [B,N], link [B,N,N],
// read<i> [B,r,c]; and the interface: write1/{key,beta,erase,add,allocation_gate,gate[,mask]},
// read<i>/{key,beta,free,modes[,mask][,sharp_forward,sharp_backward]}.
#pragma once
#include <string>
#include <vector>

#include "matmem/models/layers/cells.hpp"
#include "matmem/ops/dnc.hpp"

namespace matmem {

struct DNCConfig {
  CellKind controller = CellKind::lstm;  // lstm, rnn or ff
  double forget_bias = 1.0;              // an LSTM controller's forget-gate bias at the start ([D]: 1)
  double controller_clip = 0;            // > 0: the controller's H (and C) clipped to ±this; 0: not clipped
  bool clip_logits = false;              // the output logits clipped to ±controller_clip too
  std::vector<std::pair<std::int64_t, std::int64_t>> layers = {{15, 15}, {15, 15}};
  std::int64_t slots = 16, slot_rows = 6, slot_cols = 6;
  int read_heads = 1;  // 1..kDncMaxReadHeads; one write head
  // The usage's gradient to w^w_{t−1}: none as [D] (stop), or the function's own as [N] (full).
  enum class UsageGradient { stop, full } usage_gradient = UsageGradient::stop;
  // False: every free gate held at f^i = 0 (ψ = 1, so a written slot's usage never falls): the ablation that
  // tells whether a task needs freeing. The free gates' maps stay, with no gradient.
  bool free_gates = true;
  // [D]'s ε of the content weightings' cosine similarity, under each norm's root and on their product
  // (CosineEps{ε, ε}); 0: the library's cosine similarity (exact norms, 1e-8 on the product), the MatNTM's.
  double cosine_eps = 1e-6;
  // Masked content lookup (Csordás & Schmidhuber 2019, spec/dnc.md §10): each head's key and every slot
  // compared through the head's mask μ = m₀ + (1 − m₀) σ(mat(H)) [r,c], m₀ = `mask_floor` in [0, 1] (their
  // recall runs: 0.1; a floor above 0 keeps every element in the comparison a little).
  bool masked_lookup = false;
  double mask_floor = 0.1;
  // Link sharpness (Csordás & Schmidhuber 2019): each read head's forward and backward weightings sharpened,
  // f ← sharpen(f, s_f), b ← sharpen(b, s_b), s = 1 + softplus(mat(H)) per head and direction.
  bool link_sharpness = false;
  // De-allocation (Csordás & Schmidhuber 2019): a freed slot's content erased with it, the write acting on
  // M_{t−1}(i) ψ_t(i) (ψ_t = Π_i (1 − f^i w^{r,i}_{t−1}), the usage's retention).
  bool deallocation = false;
  // Layer normalisation of the interface (Franke et al. 2018): every part of it normalised as one vector per
  // sample, then a gain and bias per part, before the activations.
  bool interface_norm = false;
  // The read weighting's fallback: what a head's forward and backward weightings do not place goes to its
  // content weighting (ops' dnc_read_weighting), so every read weighting is a distribution (step 8).
  bool read_fallback = false;
  std::int64_t input_rows = 6, input_cols = 5, output_rows = 5, output_cols = 5;
};

class MatDNC : public Model {
 public:
  MatDNC(const DNCConfig& config, DType dtype, std::uint64_t seed, std::string name = "dnc");
  void step(Step& s) override;
  const DNCConfig& config() const { return config_; }

 private:
  struct ReadHead {
    std::string weighting, read, term;         // states w^{r,i}, R^i; the read's controller term r<i>
    std::string key, beta, free, modes, mask, sharp_forward, sharp_backward;  // parameter paths
    std::string exposed;                       // read<i>: the prefix of its exposed tensors
  };
  DNCConfig config_;
  Controller controller_;
  std::vector<ReadHead> reads_;
  std::string write_key_, write_beta_, erase_, add_, allocation_gate_, write_gate_, write_mask_, out_;
};

}  // namespace matmem
