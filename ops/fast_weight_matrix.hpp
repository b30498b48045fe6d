// The two ops of the fast-weight matrix kept explicitly (ops/fast_weight_matrix.cpp), for the fast-weights
// RNN's `matrix` form (models/fastweights/fast_weights.hpp). vec(X) reads a matrix row by row (row-major), so
// a [B,r,c] batch is a batch of vectors of n = r·c elements.
//   vec_outer(a, b):  a:[B,r,c], b:[B,r',c'] -> [B, r·c, r'·c'],  y_b = vec(a_b) vec(b_b)ᵀ
//   vec_matvec(m, x): m:[B,n,n], x:[B,r,c] with n = r·c -> [B,r,c],  vec(y_b) = m_b vec(x_b)
// A header of its own, as frobenius.hpp: included by the model that uses it, not by every op's user.
#pragma once
#include "matmem/autodiff/tape.hpp"

namespace matmem {

Var vec_outer(Var a, Var b);
Var vec_matvec(Var m, Var x);

}  // namespace matmem
