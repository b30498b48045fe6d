/// @file
/// The differentiable ops of matmem (spec/models.md, "Ops"). Each is one file in ops/ with its math,
/// shape check, forward and backward side by side and one registry entry (ops/registry.hpp).
///
/// Shapes use the spec's vocabulary (runtime/shape.hpp): a batch of matrices [B,r,c], a memory [B,N,r,c],
/// a weighting [B,N] (stored as [B,1,N]), a per-sample scalar [B,1] (stored as [B,1,1]), a parameter [r,c]
/// (stored as [1,r,c], broadcast over the batch). Every op checks its operands and throws ShapeError
/// naming the op and the shapes when they do not fit.
#pragma once
#include <span>
#include <vector>

#include "matmem/autodiff/tape.hpp"

namespace matmem {

// --- bilinear maps (ops/bilinear.cpp) ----------------------------------------------------------------------
/// bilinear(P, U, V) = Uᵀ P V per batch item.  P:[B,r,c], U:[r,r'], V:[c,c'] -> [B,r',c']   (001 eq. 3)
Var bilinear(Var p, Var u, Var v);
/// One term U_iᵀ P_i V_i of a mat().
struct MatTerm {
  Var p, u, v;  ///< P_i [B,r,c], U_i [r,r'], V_i [c,c']
};
/// mat(P_1..P_k; θ) = Σ_i U_iᵀ P_i V_i + B, B:[r',c'] broadcast over the batch (an invalid Var: no bias).
Var mat(std::span<const MatTerm> terms, Var bias);
/// mat() with the terms as a braced list: `mat({{x, u, v}, {h, w, z}}, b)`.
Var mat(std::initializer_list<MatTerm> terms, Var bias);
/// One projection U_kᵀ x V_k + B_k of projections().
struct Projection {
  Var u, v, b;  ///< U_k [r,r'], V_k [c,c'], B_k [r',c'] (an invalid Var: no bias)
};
/// Several projections of one x in one op (ops/projections.cpp): out[k] = U_kᵀ x V_k + B_k, equal to
/// mat({{x, U_k, V_k}}, B_k) each, with the K first-stage GEMMs as one. At most 16.
/// For a row x (r = 1, every U_k 1x1): stack_columns of the V_k, then stacked_projections; else stack_columns of
/// the U_k, then the form below.
void projections(Var x, std::span<const Projection> p, std::span<Var> out);
/// projections' matrix form with the U_k already side by side, U_s = stack_columns(U_1..U_K) [1,r,R']: out[k] =
/// (U_sᵀ x)_k V_k + B_k, (U_sᵀ x)_k its rows of U_k, B_k [r'_k,c'_k] (ops/projections.cpp). Several time steps'
/// calls on one U_s (Step::projections stacks it once a pass) sum their U gradients in U_s's, which
/// stack_columns splits once. At most 16.
void projections(Var x, Var u_stacked, std::span<const Var> v, std::span<const Var> b, std::span<Var> out);
/// projections' vector form with the V_k already side by side, V_s = stack_columns(V_1..V_K) [1,c,C]: out[k] =
/// u_k (x V_s)_k + B_k, (x V_s)_k its columns of V_k, u_k [1,1] and B_k [1,c'_k] (ops/projections.cpp). Several
/// time steps' calls on one V_s (Step::projections stacks it once a pass) sum their V gradients in V_s's, which
/// stack_columns splits once. At most 16.
void stacked_projections(Var x, Var v_stacked, std::span<const Var> u, std::span<const Var> b, std::span<Var> out);
/// The most inputs one stacked_mats takes (the tape's limit for a node).
constexpr std::size_t kStackedMatsMaxInputs = 64;
/// Several mats into rows of the same terms (ops/stacked_mats.cpp): out[g] = Σ_t u[t G + g]ᵀ (x_t V_s[t])_g +
/// b[g], equal to mat({{x_t, u[t G + g], V_t,g}, …}, b[g]) for each g, with V_s[t] = stack_columns(V_t,1..V_t,G)
/// [1,c_t,C]; x_t [B,r_t,c_t], u [r_t,1], b[g] [1,c'_g]. An LSTM's gates (Step::mats stacks each V_s[t] once a
/// pass). At most 16 outputs and kStackedMatsMaxInputs inputs (2 T + T G + G).
void stacked_mats(std::span<const Var> x, std::span<const Var> v_stacked, std::span<const Var> u, std::span<const Var> b,
                  std::span<Var> out);

// --- elementwise, with broadcasting -------------------------------------------------------------------------
/// a + b, broadcasting: along each of batch, slots, rows and cols an operand's size equals the result's or
/// is 1 (a parameter [r,c] over the batch, a per-sample scalar [B,1] over a matrix or weighting). (ops/add.cpp)
Var add(Var a, Var b);
Var sub(Var a, Var b);       ///< a - b, broadcasting as add()          (ops/sub.cpp)
Var hadamard(Var a, Var b);  ///< a ⊙ b, broadcasting as add()          (ops/hadamard.cpp)
Var scale(Var x, double a);  ///< a x            (ops/scale.cpp)
Var affine(Var x, double a, double b);  ///< a x + b (ops/scale.cpp)
Var one_minus(Var x);        ///< 1 - x
Var sigmoid(Var x);          ///< 1 / (1 + e^-x) (ops/sigmoid.cpp)
Var tanh(Var x);             ///< tanh x         (ops/tanh.cpp)
Var relu(Var x);             ///< max(x, 0)      (ops/relu.cpp)
/// min(max(x, −c), c) for c > 0 (finite; else an Error); its gradient passes for −c ≤ x ≤ c, zero outside  (ops/clip.cpp)
Var clip(Var x, double c);
/// x in the forward pass; backward passes the upstream gradient clipped to ±c element by element, c > 0 (finite;
/// else an Error): Graves 2013's clipping of derivatives inside backpropagation through time  (ops/clip.cpp)
Var clip_gradient(Var x, double c);
Var softplus(Var x);         ///< log(1 + e^x), computed as max(x,0) + log1p(e^-|x|)  (ops/softplus.cpp)
Var exp(Var x);              ///< e^x            (ops/exp.cpp)
Var softmax(Var x);          ///< along the last axis (cols), max subtracted first  (ops/softmax.cpp)
Var sum(Var x);              ///< Σ of all elements -> [1,1,1]  (ops/sum.cpp)
Var mean(Var x);             ///< Σ / count -> [1,1,1]
/// What layer_norm() normalises: each sample's whole matrix, or each of its rows.
enum class LayerNormOver { matrix, rows };
/// Layer normalisation (ops/layer_norm.cpp): each sample's matrix (matrix) or each of its rows (rows) shifted
/// and scaled to mean 0, variance 1: y = (x − m)/√(v + ε).  x:[B,r,c] -> [B,r,c]. Gain and bias: hadamard, add.
Var layer_norm(Var x, LayerNormOver over = LayerNormOver::matrix, double eps = 1e-5);
inline constexpr std::size_t kLayerNormMaxParts = 64;  ///< layer_norm_moments' and layer_norm_joint's most parts
/// The mean and inverse deviation of every element of the parts, per sample (ops/layer_norm.cpp): x_k:[B,r_k,c_k]
/// -> [B,2,1], row 0 m, row 1 1/√(v + ε). layer_norm_joint's statistics.
Var layer_norm_moments(std::span<const Var> parts, double eps = 1e-6);
/// Layer normalisation of several matrices as one group (ops/layer_norm.cpp): out[k] = (x_k − m) / √(v + ε), m and
/// v over every element of every part of a sample (an interface vector normalised before its split).
void layer_norm_joint(std::span<const Var> parts, std::span<Var> out, double eps = 1e-6);
/// Batch normalisation over the batch (ops/batch_norm.cpp): each matrix element (i, j) shifted and scaled by its
/// mean and biased variance over the batch, y = (x − μ)/√(σ² + ε). x:[B,r,c] -> [B,r,c]. γ and β: hadamard, add.
/// Over a batch split across threads or ranks, with running statistics for evaluation: ops/batch_norm.hpp.
Var batch_norm(Var x, double eps = 1e-5);

// --- memory addressing (NTM) ---------------------------------------------------------------------------------
/// The epsilons of cosine_similarity: cos = ⟨K, M_i⟩_F / (‖K‖ ‖M_i‖ + product), ‖x‖ = √(Σx² + norm). The
/// defaults are the MatNTM's (exact norms); DeepMind's DNC takes {1e-6, 1e-6}.
struct CosineEps {
  double product = 1e-8;  ///< added to the product of the norms (> 0)
  double norm = 0;        ///< added under each norm's root (≥ 0)
  /// A model's one-number setting (`ntm.cosine_eps`, `dnc.cosine_eps`): ε > 0 gives {ε, ε}, 0 the defaults.
  static CosineEps from_setting(double eps) { return eps > 0 ? CosineEps{eps, eps} : CosineEps{}; }
};
/// cos(K, M_i) = ⟨K, M_i⟩_F / (‖K‖_F ‖M_i‖_F + ε), ε = eps.product.  K:[B,r,c], M:[B,N,r,c] -> [B,N]
/// (ops/cosine_similarity.cpp). With the exact norms (eps.norm = 0) the similarity has no derivative where a
/// norm is 0: at a zero slot M_i the gradient with respect to it is g K / ε, and at a zero key g M_i / ε, not
/// the function's; a key or memory addressed by content must start from a non-zero state (models/README.md,
/// "Known traps"). With eps.norm > 0 every norm is at least √eps.norm, the function is smooth at zero and the
/// gradient at a zero slot is its own, g K / (‖K‖ √eps.norm + ε).
Var cosine_similarity(Var key, Var memory, CosineEps eps = {});
/// The same for H keys in one pass over the memory: -> [B,H,N], row h for key h (take it with row()).
Var cosine_similarity(std::span<const Var> keys, Var memory, CosineEps eps = {});
/// Row h of x:[B,H,N] -> [B,N]  (ops/row.cpp)
Var row(Var x, std::int64_t h);
inline constexpr std::size_t kStackRowsMaxParts = 64;  ///< stack_rows' most parts (the tape's most inputs of an op)
/// The parts' rows one below the other: x_k:[B,r_k,c] (1 to kStackRowsMaxParts) -> [B,Σr_k,c]  (ops/stack_rows.cpp)
Var stack_rows(std::span<const Var> parts);
inline constexpr std::size_t kStackColumnsMaxParts = 64;  ///< stack_columns' most parts
/// The parts' columns side by side: x_k:[B,r,c_k] (1 to 64) -> [B,r,Σc_k]  (ops/stack_columns.cpp)
Var stack_columns(std::span<const Var> parts);
/// w̃_i = Σ_{j=-S..S} s_j w_{(i-j) mod N}.  w:[B,N], s:[B,2S+1] -> [B,N]  (ops/circular_shift.cpp)
Var circular_shift(Var w, Var s);
/// w_i = (w̃_i + ε)^γ / Σ_k (w̃_k + ε)^γ, ε = 1e-12.  w̃:[B,N] (≥ 0), γ:[B,1] -> [B,N]  (ops/sharpen.cpp)
Var sharpen(Var w, Var gamma);
/// One NTM head's weighting from its similarities in one kernel (ops/ntm_addressing.cpp):
///   sharpen(circular_shift(g softmax(β K_h) + (1 − g) w_prev, s), γ),  K_h = row `head` of similarity [B,H,N];
///   β, g, γ:[B,1], s:[B,2S+1], w_prev:[B,N] -> [B,N]. Equal to the composed ops, which remain for other uses.
Var ntm_addressing(Var similarity, std::int64_t head, Var beta, Var gate, Var shift, Var gamma, Var w_prev);
inline constexpr std::size_t kNtmAddressingMaxHeads = 12;  ///< the most heads of one ntm_addressing call (64 inputs)
/// G heads' ntm_addressing in one op call (ops/ntm_addressing.cpp): out[g] is that of row first_head + g of
/// the similarity with β[g], g[g], s[g], γ[g], w_prev[g]; 1 ≤ G ≤ kNtmAddressingMaxHeads, every s of one width.
void ntm_addressing(Var similarity, std::int64_t first_head, std::span<const Var> beta, std::span<const Var> gate,
                    std::span<const Var> shift, std::span<const Var> gamma, std::span<const Var> w_prev,
                    std::span<Var> out);
/// The same from the heads' logits, the NTM's activations inside (ops/ntm_addressing.cpp): β = softplus(β̂),
/// g = sigm(ĝ), s = softmax(ŝ), γ = 1 + softplus(γ̂); equal bit for bit to those ops composed with it.
void ntm_addressing_logits(Var similarity, std::int64_t first_head, std::span<const Var> beta_logit,
                           std::span<const Var> gate_logit, std::span<const Var> shift_logit,
                           std::span<const Var> gamma_logit, std::span<const Var> w_prev, std::span<Var> out);
/// R = Σ_i w_i M_i.  M:[B,N,r,c], w:[B,N] -> [B,r,c]  (ops/memory_read.cpp)
Var memory_read(Var memory, Var w);
/// M'_i = M_i ⊙ (1 - w_i E) + w_i A.  M:[B,N,r,c], w:[B,N], E, A:[B,r,c] -> [B,N,r,c]  (ops/memory_write.cpp)
Var memory_write(Var memory, Var w, Var erase, Var add);
/// An NTM step's reads and first write in one pass over M (ops/memory_read_write.cpp): out[0] =
/// memory_write(M, w, E, A), out[1 + k] = memory_read(M, read_weights[k]) (the reads see M before the write);
/// out has 1 + R elements. Equal to the separate ops, which remain for other uses.
void memory_read_write(Var memory, std::span<const Var> read_weights, Var w, Var erase, Var add, std::span<Var> out);
/// An NTM step's reads and all its writes in one pass over M (ops/memory_writes.cpp): out[0] = the memory after
/// memory_write(·, w[k], erase[k], add[k]) for k = 0, 1, … in order, out[1 + j] = memory_read(M, read_weights[j])
/// (the reads see M before the writes); 1 to 16 writes, 0 to 15 reads, out has 1 + R elements. Equal to the
/// separate ops.
void memory_writes(Var memory, std::span<const Var> read_weights, std::span<const Var> w, std::span<const Var> erase,
                   std::span<const Var> add, std::span<Var> out);
/// The same with no reads: the memory after all the writes.
Var memory_writes(Var memory, std::span<const Var> w, std::span<const Var> erase, std::span<const Var> add);

// --- losses: scalars [1,1,1], means over elements (or rows) --------------------------------------------------
/// mean of max(x,0) - x t + log1p(e^-|x|): BCE of sigmoid(x) against t, stable for large |x|  (ops/bce_with_logits.cpp)
Var bce_with_logits(Var logits, Var target);
/// mean of (x - t)^2  (ops/mse.cpp)
Var mse(Var x, Var target);
/// -(1/rows) Σ_rows Σ_j t_j log softmax(x)_j along the last axis; t are probabilities  (ops/softmax_cross_entropy.cpp)
Var softmax_cross_entropy(Var logits, Var target);

// Operators for model code.
/// a + b: add(a, b).
inline Var operator+(Var a, Var b) { return add(a, b); }
/// a - b: sub(a, b).
inline Var operator-(Var a, Var b) { return sub(a, b); }
/// a ⊙ b: hadamard(a, b).
inline Var operator*(Var a, Var b) { return hadamard(a, b); }
/// a x: scale(x, a).
inline Var operator*(double a, Var x) { return scale(x, a); }
/// a - x: affine(x, -1, a).
inline Var operator-(double a, Var x) { return affine(x, -1.0, a); }

}  // namespace matmem
