// Random connectivities for the capacity analysis (paper 000 §5 simulates normal convergent U, V with
// Tr(WᵀW) = 1 and ε₁ = ε₂ = 1). Every draw comes from a seeded matmem::Rng, so a seed fixes the instance.
//
//   random_orthogonal(n):          Haar orthogonal O — QR of an n×n N(0,1) matrix, columns' signs fixed so
//                                  that diag(R) > 0 (Mezzadri 2007).
//   random_normal_convergent(n):   U = O B Oᵀ, B block diagonal: 2×2 blocks ρ[[cos θ, −sin θ], [sin θ, cos θ]]
//                                  (eigenvalues ρe^{±iθ}) and, for odd n, one 1×1 block ±ρ;
//                                  ρ ~ U(rho_min, rho_max), θ ~ U(0, π). U is normal (UUᵀ = UᵀU) and
//                                  convergent; equivalently U = (O R Oᵀ)(O S Oᵀ), an orthogonal matrix times
//                                  a commuting symmetric contraction.
//   random_nonnormal(n):           U = O (B' + s T) Oᵀ: B' is the block diagonal above with ρ ~ U(0, rho_max) and
//                                  each 2×2 block skewed to diag(k, 1/k) B diag(1/k, k), ln k² ~ N(0, tanh²(s));
//                                  T is strictly upper block-triangular (zero on and below the blocks) with
//                                  N(0, 1/n) entries; s = strength. The eigenvalues are B's (complex pairs
//                                  included), so ρ(U) < rho_max, while ‖U‖ can exceed 1: the
//                                  transient amplification that lets non-normal networks beat the normal ones
//                                  (Ganguli et al. 2008).
//   random_input(r, c):            W with N(0,1) entries scaled so that Tr(WᵀW) = 1.
#pragma once
#include <cstddef>
#include <string>

#include "matmem/models/capacity/capacity.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem::capacity {

enum class Connectivity { normal, nonnormal };
Connectivity connectivity_from_name(const std::string& name);  // "normal" | "nonnormal", else matmem::Error
const char* connectivity_name(Connectivity c);

struct GeneratorOptions {
  double rho_min = 0.0;    // eigenvalue moduli of normal matrices ~ U(rho_min, rho_max)
  double rho_max = 0.95;
  double strength = 1.0;   // non-normal part s
};

Matrix random_orthogonal(std::size_t n, Rng& rng);
Matrix random_normal_convergent(std::size_t n, Rng& rng, double rho_max = 0.95, double rho_min = 0.0);
Matrix random_nonnormal(std::size_t n, Rng& rng, double rho_max = 0.95, double strength = 1.0);
Matrix random_input(std::size_t rows, std::size_t cols, Rng& rng);

Matrix random_connectivity(std::size_t n, Connectivity kind, Rng& rng, const GeneratorOptions& opt = {});

// U (r×r), V (c×c), W (r×c) drawn in that order from rng.
MatrixNet random_matrix_net(std::size_t rows, std::size_t cols, Connectivity kind, Rng& rng, Noise noise = {},
                            const GeneratorOptions& opt = {});
// A (n×n), then v with ‖v‖ = 1.
VectorNet random_vector_net(std::size_t n, Connectivity kind, Rng& rng, double eps = 1.0,
                            const GeneratorOptions& opt = {});

}  // namespace matmem::capacity
