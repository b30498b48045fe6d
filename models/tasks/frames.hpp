// Writing the generated tasks' frames: a matrix into the content rows of a frame, a constant into one of its
// flag rows. Shared by the tasks in tasks.cpp, repeat_copy.cpp and keep_discard.cpp; not installed.
#pragma once
#include <cstdint>

#include "matmem/runtime/tensor.hpp"

namespace matmem::frames {

/// Row `row` of every matrix of the frame f [B,r',c] set to v.
void set_row(Tensor& f, std::int64_t row, double v);
/// The first r rows of every matrix of the frame f [B,r',c] (r ≤ r') set to m [B,r,c], converted to f's dtype.
void put(Tensor& f, const Tensor& m);

}  // namespace matmem::frames
