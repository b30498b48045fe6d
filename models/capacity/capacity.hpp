// Memory capacity of linear matrix RNNs: Fisher memory curves (paper 000 §2, eqs. 5–33, 49;
// spec/models.md "Memory capacity"). Public API of the capacity wing: plain structs and std::vector results;
// xtensor stays inside the .cpp files. The queue-memory network (eqs. 34–47) is in queue.hpp, the random
// connectivities in generators.hpp, loading U, V, W from a checkpoint in checkpoint.hpp.
//
// The network (eq. 5 with f = id), X(n) and W r×c, U r×r, V c×c, s(n) a scalar signal:
//   X(n) = Uᵀ X(n−1) V + W s(n) + Z(n),      Z(n) ~ MN(0, ε₁I, ε₂I) independent over n.
// Row-major vectorisation x = vec(X) turns it into a vector network with N' = r·c neurons:
//   x(n) = A x(n−1) + w s(n) + z(n),  A = Uᵀ ⊗ Vᵀ,  w = vec(W),  z ~ N(0, ε₁ε₂ I).
//
// Two Fisher memory curves are computed, because they differ (see models/results/capacity.md):
//
// * fmc_eq12 — the paper's Theorem 1 / Corollary 1.1. It takes X(n) | s to be matrix normal with row and
//   column covariances Ψ, Σ solving the discrete Lyapunov equations (eq. 49, scaled by ε):
//     Ψ = Uᵀ Ψ U + ε₁ I,   Σ = Vᵀ Σ V + ε₂ I,                                        (eqs. 9, 49)
//     J(i) = Tr(Σ⁻¹ V^{iT} Wᵀ U^i Ψ⁻¹ U^{iT} W V^i),   J_tot = Σ_{i≥0} J(i),          (eqs. 12, 16)
//   i.e. it uses Cov(x) = Ψ ⊗ Σ.
// * fmc_exact — the Fisher information of the state's actual Gaussian law. The state's covariance is
//     C = ε₁ε₂ Σ_k (U^{kT} U^k) ⊗ (V^{kT} V^k)   (a sum of Kronecker products, not Ψ ⊗ Σ),
//   the solution of C = A C Aᵀ + ε₁ε₂ I, and J(i) = (A^i w)ᵀ C⁻¹ (A^i w) (eq. 14 applied to the vectorised
//   network). Ψ ⊗ Σ = ε₁ε₂ Σ_{k,l} (U^{kT}U^k) ⊗ (V^{lT}V^l) ⪰ C, so eq. 12 under-reports the information.
//
// Both totals are infinite sums evaluated exactly: J_tot = Tr(M G) with G = Σ_i (A^i w)(A^i w)ᵀ solving
// G = A G Aᵀ + w wᵀ (M = C⁻¹, or (Ψ ⊗ Σ)⁻¹ for eq. 16). Input Fisher information (eq. 24, Lemma 2):
//   I(W) = Tr(WᵀW) / (ε₁ε₂),  J_tot,rel = J_tot / I(W).
// Bounds: normal convergent U, V give J_tot,rel(eq. 16) < 1 (Corollary 2.1); in general
// J_tot,rel ≤ r·c (Theorem 3, N² for square states) — the exact curve obeys the same bound (Ganguli et al.
// 2008 for r·c neurons) and equals 1 for every normal convergent U, V.
//
// Normal U, V (eqs. 17–18): with U = E_U Λ_U E_Uᴴ, V = E_V Λ_V E_Vᴴ unitary and B = E_Uᴴ W E_V,
//   J(i)  = (1/ε₁ε₂) Σ_{j,k} |b_jk|² |λ_Uj λ_Vk|^{2i} (1 − |λ_Uj|²)(1 − |λ_Vk|²)            (eq. 17)
//   J_tot = (1/ε₁ε₂) Σ_{j,k} |b_jk|² (1 − |λ_Uj|²)(1 − |λ_Vk|²) / (1 − |λ_Uj|²|λ_Vk|²)       (eq. 18)
// and for the exact curve (1 − |λ_Uj|²)(1 − |λ_Vk|²) is replaced by 1 − |λ_Uj λ_Vk|², so J_tot = I(W).
//
// The vector network (eq. 14): x(n) = A x(n−1) + v s(n) + z(n), z ~ N(0, ε I),
//   C = ε Σ_k A^k A^{kT} (C = A C Aᵀ + ε I),  J(i) = vᵀ A^{iT} C⁻¹ A^i v,  I(v) = ‖v‖² / ε.
#pragma once
#include <cstddef>
#include <vector>

namespace matmem::capacity {

// Dense real matrix, row-major: the exchange type of the capacity API.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<double> data;

  Matrix() = default;
  Matrix(std::size_t r, std::size_t c, double fill = 0.0) : rows(r), cols(c), data(r * c, fill) {}
  static Matrix identity(std::size_t n);

  double& operator()(std::size_t i, std::size_t j) { return data[i * cols + j]; }
  double operator()(std::size_t i, std::size_t j) const { return data[i * cols + j]; }
};

Matrix transpose(const Matrix& m);
Matrix multiply(const Matrix& a, const Matrix& b);
double frobenius_squared(const Matrix& m);  // Tr(mᵀm)

struct Noise {
  double eps1 = 1.0, eps2 = 1.0;  // Z ~ MN(0, ε₁I, ε₂I)
};

// X(n) = Uᵀ X(n−1) V + W s(n) + Z(n).
struct MatrixNet {
  Matrix u, v, w;
  Noise noise;
  std::size_t rows() const { return w.rows; }
  std::size_t cols() const { return w.cols; }
};
void check(const MatrixNet& net);  // shapes and ε > 0, else matmem::Error

// x(n) = A x(n−1) + v s(n) + z(n), z ~ N(0, ε I).
struct VectorNet {
  Matrix a;
  std::vector<double> v;
  double eps = 1.0;
};

// The row and column covariances of eq. 49, with the relative residuals max|Ψ − UᵀΨU − ε₁I| / max|Ψ| and the
// same for Σ (Bartels–Stewart is backward stable, so these sit near machine precision times ‖U‖²).
struct Covariances {
  Matrix psi, sigma;
  double psi_residual = 0, sigma_residual = 0;
};
Covariances row_column_covariances(const MatrixNet& net);

struct MemoryCurve {
  std::vector<double> j;           // J(i), i = 0..K
  double total = 0;                // J_tot = Σ_{i≥0} J(i), the whole infinite sum (not Σ of `j`)
  double input_information = 0;    // I(W) = Tr(WᵀW)/(ε₁ε₂), or ‖v‖²/ε for a vector network
  double relative() const { return total / input_information; }
  std::vector<double> running_sum() const;  // Σ_{i≤k} J(i) for k = 0..K
};

MemoryCurve fmc_eq12(const MatrixNet& net, int k_max);   // the paper's eqs. 12 and 16
MemoryCurve fmc_exact(const MatrixNet& net, int k_max);  // Fisher information of the true state law
MemoryCurve fmc_vector(const VectorNet& net, int k_max); // eq. 14

// Normal U, V: closed forms from the eigen-decompositions. Throw matmem::Error if U or V is not normal
// (‖UUᵀ − UᵀU‖ above round-off) or not convergent.
MemoryCurve fmc_normal_eq17(const MatrixNet& net, int k_max);        // eqs. 17 and 18
MemoryCurve fmc_normal_exact(const MatrixNet& net, int k_max);       // the exact curve for normal U, V
bool is_normal(const Matrix& m, double tol = 1e-10);

double spectral_radius(const Matrix& m);

// The vectorised network of a matrix network: A = Uᵀ ⊗ Vᵀ, v = vec(W), ε = ε₁ε₂ (r·c neurons).
VectorNet vectorise(const MatrixNet& net);

// Gauge: (cU, V/c) is the same dynamical system as (U, V) — Uᵀ X V is unchanged. The exact curve is
// invariant under it; eq. 12 is not (used by the tests and the README's findings).
MatrixNet rescaled(const MatrixNet& net, double c);

}  // namespace matmem::capacity
