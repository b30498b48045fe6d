// transpose (ops/transpose.cpp): y = xᵀ for every matrix of a batch, x:[B,r,c] -> [B,c,r]; a parameter [r,c]
// (batch 1) gives [c,r]. The tied-weight auto-encoder's decoder maps with U_l and V_l transposed
// (models/ffn/autoencoder.hpp). Declared apart from ops.hpp, which the whole tree includes.
#pragma once
#include "matmem/autodiff/tape.hpp"

namespace matmem {

Var transpose(Var x);

}  // namespace matmem
