// Matrix RNN with a one-slot queue memory (paper 000 §3.2, eqs. 34–47, p = 1, α₁ = 1):
//   X(n) = Uᵀ X(n−1) V + W s(n) + X(n−2) + Z(n).                                              (eq. 34)
//
// The paper's series (eq. 40), truncated at depth D (the number of memory substitutions m ≤ D). Writing
// L(Y) = Uᵀ Y V, L_U(Y) = Uᵀ Y U, L_V(Y) = Vᵀ Y V, the m-th terms of eq. 40 are the nested sums
// Σ_{i₁..i_m ≥ 2} Σ_k, which collapse to resolvent powers (the "recursive use of the Lyapunov equation"
// of §5):
//   Ψ_D = ε₁ Σ_{m=0}^{D} P_m,  P_0 − Uᵀ P_0 U = I,  P_m − Uᵀ P_m U = P_{m−1}   (P_m = (I − L_U)^{−(m+1)} I)
//   Σ_D = ε₂ Σ_{m=0}^{D} S_m,  the same with V
//   ∂M/∂s_k = U^{kT} Ĝ_D V^k,   Ĝ_D = Σ_{m=0}^{D} G_m,  G_0 = W,  G_m − Uᵀ G_m V = G_{m−1}     (eq. 42)
//   J'(k) = Tr(Σ_D⁻¹ (∂M/∂s_k)ᵀ Ψ_D⁻¹ (∂M/∂s_k)),   J'_tot = Σ_{k≥0} J'(k) (exact, a Stein equation)  (eq. 41)
// D = 0 is the memoryless network (eqs. 12, 16). Eq. 46 rewrites eq. 41 with the "memory fraction"
// precisions of eq. 47; fmc_queue_eq46 evaluates that form so the tests can check the identity.
//
// What the series is worth (models/results/capacity.md): every m adds at least I to P_m, so Ψ_D ⪰ ε₁(D+1) I and the
// covariance series diverge; eq. 41 at depth D is a ratio of two divergent quantities whose value depends on
// D. The system itself is never asymptotically stable: with A = Uᵀ ⊗ Vᵀ its companion matrix [[A, I], [I, 0]]
// has eigenvalues μ with μ² − λ μ − 1 = 0 for each eigenvalue λ = λ_U λ_V of A, and the two roots multiply
// to −1, so max|μ| ≥ 1 (= 1 only if every λ is imaginary with |λ| ≤ 2).
//
// For normal U, V, fmc_queue_normal evaluates eq. 41 in the eigenbases, in log space, for any depth
// (x = conj(λ_Uj) λ_Vk, b = E_Uᴴ W E_V):
//   ψ_j = Σ_{m=0}^{D} (1 − |λ_Uj|²)^{−(m+1)},  σ_k likewise,  ĝ_jk = b_jk Σ_{m=0}^{D} (1 − x_jk)^{−m},
//   J'(i) = Σ_{j,k} |ĝ_jk|² |x_jk|^{2i} / (ε₁ε₂ ψ_j σ_k),  J'_tot = Σ_{j,k} |ĝ_jk|² / ((1 − |x_jk|²) ε₁ε₂ ψ_j σ_k).
// Each (j,k) term behaves like ((1 − |λ_Uj|²)(1 − |λ_Vk|²) / |1 − x_jk|²)^D, and
// |1 − x|² − (1 − |λ_U|²)(1 − |λ_V|²) = |λ_U − λ_V|² ≥ 0, so as D → ∞ every term with λ_Uj ≠ λ_Vk goes to 0.
#pragma once
#include <vector>

#include "matmem/models/capacity/capacity.hpp"

namespace matmem::capacity {

struct QueueCurve {
  MemoryCurve curve;            // J'(k), k = 0..K, and J'_tot; relative() divides by Tr(WᵀW)/(ε₁ε₂)
  int depth = 0;
  double psi_condition = 0;     // condition numbers of Ψ_D and Σ_D (general solver only; 0 for the normal one)
  double sigma_condition = 0;
  bool reliable() const { return psi_condition < 1e12 && sigma_condition < 1e12; }
};

// General U, V (both convergent): the Stein recursion above. Cost O(D N³ + (N²)³).
QueueCurve fmc_queue_eq41(const MatrixNet& net, int k_max, int depth);
// Normal U, V: closed form in the eigenbases; stable at any depth (up to 10⁶).
QueueCurve fmc_queue_normal(const MatrixNet& net, int k_max, int depth);
// Uses the normal closed form when U and V are normal, else the general recursion.
QueueCurve fmc_queue(const MatrixNet& net, int k_max, int depth);
// Eq. 46–47 (Woodbury form of eq. 41) for one lag k; needs depth ≥ 1 (Ψ_MEM invertible).
double fmc_queue_eq46(const MatrixNet& net, int k, int depth);

// J'_tot at each depth in `depths`.
std::vector<double> queue_total_by_depth(const MatrixNet& net, const std::vector<int>& depths);

// The network's own Fisher memory curve at a finite horizon n, computed from its actual Gaussian law (no
// series): started from rest (X(0) = X(−1) = 0), with A = Uᵀ ⊗ Vᵀ and w = vec(W),
//   x(n) = Σ_{k<n} H_k (w s_k + z(n−k)),  H_0 = I, H_1 = A, H_k = A H_{k−1} + H_{k−2}  (queue; H_k = A^k without),
//   C_n = ε₁ε₂ Σ_{k<n} H_k H_kᵀ,  J_n(k) = (H_k w)ᵀ C_n⁻¹ (H_k w),  J_tot,n = Σ_{k<n} J_n(k).
// Signal and noise share H_k, so J_tot,n ≤ r·c · Tr(WᵀW)/(ε₁ε₂) for either system and every n; for normal
// U, V each eigen-channel is scalar and J_tot,n = Tr(WᵀW)/(ε₁ε₂) exactly, with or without the memory.
// `condition` is C_n's condition number: the queue network is unstable, so C_n grows like ρ^{2n} along its
// unstable directions; results with condition above ~1e12 are flagged unreliable.
struct HorizonCurve {
  MemoryCurve curve;  // j has n entries (k = 0..n−1); total = Σ j
  int horizon = 0;
  double condition = 0;
  bool reliable() const { return condition < 1e12; }
};
HorizonCurve fmc_horizon(const MatrixNet& net, int horizon, bool with_queue);

// Largest |μ| over the roots of μ² − λ_Uj λ_Vk μ − 1 = 0: the spectral radius of the queue network's
// companion matrix (≥ 1 always).
double queue_spectral_radius(const MatrixNet& net);
// The companion matrix [[A, I], [I, 0]] of the vectorised queue network, A = Uᵀ ⊗ Vᵀ (2rc × 2rc).
Matrix queue_companion(const MatrixNet& net);

}  // namespace matmem::capacity
