// matrix_square: each sample's matrix times itself.
//   y_b = x_b x_b,   grad_x_b = grad_y_b x_bᵀ + x_bᵀ grad_y_b.   x:[B,n,n] -> [B,n,n]
// A non-square x (or a memory) is a ShapeError.
#pragma once
#include <matmem/ops/registry.hpp>

namespace mine {

// Records Y = X·X (per sample) on X's tape.
matmem::Var matrix_square(matmem::Var x);

// The op's registry entry: its sample inputs for gradcheck and `matmem bench ops`.
matmem::OpEntry matrix_square_entry();

}  // namespace mine
