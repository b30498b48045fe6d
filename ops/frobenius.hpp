/// @file
/// frobenius: the Frobenius inner product of each sequence's pair of matrices (ops/frobenius.cpp).
///
///     a, b:[B,r,c] -> [B,1,1],  y_b = ⟨a_b, b_b⟩_F = Σ_ij a_bij b_bij
///
/// A header of its own, as bilinear.hpp: included by the models that use it, not by every op's user.
#pragma once
#include "matmem/autodiff/tape.hpp"

namespace matmem {

/// y_b = ⟨a_b, b_b⟩_F = Σ_ij a_bij b_bij.  a, b:[B,r,c] -> [B,1,1], a per-sample scalar.
Var frobenius(Var a, Var b);

}  // namespace matmem
