// Discrete Lyapunov / Stein equations, solved exactly (no truncated sums) — the capacity wing's linear algebra.
// Internal to models/capacity: it includes xtensor; the public headers (capacity.hpp, queue.hpp, …) do not.
//
//   Stein (Sylvester) equation   X − A X B = C              A n×n, B m×m, C and X n×m
//   discrete Lyapunov (eq. 49)   Ψ = Uᵀ Ψ U + Q             i.e. A = Uᵀ, B = U
//
// Method (Bartels–Stewart, complex Schur forms): A = Qa Ta Qaᴴ and B = Qb Tb Qbᴴ with Ta, Tb upper
// triangular (LAPACK zgees through xtensor-blas's cxxlapack). With Y = Qaᴴ X Qb the equation becomes
// Y − Ta Y Tb = Qaᴴ C Qb, and column j of it reads
//   (I − Tb[j,j] Ta) y_j = c̃_j + Ta Σ_{l<j} Tb[l,j] y_l,
// an upper-triangular solve per column, so the whole solve is O(n³ + m³) after the two Schur forms.
// A unique solution exists iff λ_i(A) λ_j(B) ≠ 1 for all i, j; we require ρ(A) ρ(B) < 1 (the series
// X = Σ_k A^k C B^k converges) and throw matmem::Error otherwise.
//
// Kronecker structure: the Schur form of P ⊗ Q is (Qp ⊗ Qq)(Tp ⊗ Tq)(Qp ⊗ Qq)ᴴ — Tp ⊗ Tq is again upper
// triangular — so the N²-dimensional equations of the vectorised matrix network reuse the N×N Schur
// forms of U and V; no N²×N² eigenproblem is ever solved.
#pragma once
#include <complex>
#include <cstddef>

#include <xtensor/xtensor.hpp>

#include "matmem/models/capacity/capacity.hpp"

namespace matmem::capacity::detail {

using cplx = std::complex<double>;
using RMat = xt::xtensor<double, 2>;  // row-major real matrix
using CMat = xt::xtensor<cplx, 2>;    // row-major complex matrix

RMat to_xt(const Matrix& m);
Matrix from_xt(const RMat& m);

// a = q t qᴴ, q unitary, t upper triangular; eigenvalues on t's diagonal.
struct Schur {
  CMat q, t;
  std::size_t size() const { return t.shape(0); }
  double spectral_radius() const;
};

Schur schur(const RMat& a);
Schur kron(const Schur& a, const Schur& b);  // Schur form of a ⊗ b
CMat kron(const CMat& a, const CMat& b);      // (a ⊗ b)[i·p + k, j·q + l] = a[i,j] b[k,l]
RMat kron(const RMat& a, const RMat& b);

CMat adjoint(const CMat& a);  // aᴴ
CMat complexify(const RMat& a);
RMat real_part(const CMat& a, const char* what);  // throws if the imaginary part is not round-off

// X − A X B = C for A = a.q a.t a.qᴴ, B = b.q b.t b.qᴴ.
CMat solve_stein(const Schur& a, const Schur& b, const CMat& c);
// The same for real A, B, C (X is then real).
RMat solve_stein(const Schur& a, const Schur& b, const RMat& c);

// max |X − A X B − C| for given (real) A, B: the residual a test or a caller reports.
double stein_residual(const RMat& a, const RMat& b, const RMat& c, const RMat& x);

RMat matmul(const RMat& a, const RMat& b);
RMat inverse_spd(const RMat& a);  // inverse of a symmetric positive definite matrix, symmetrised

}  // namespace matmem::capacity::detail
