// The small memory model the MatNTM's and the MatDNC's tests build: a controller of two layers (3x4, 3x3) of
// `controller` cells, 5 slots of 2x3, `reads` read heads, frames of 3x2 in and 2x2 out.
#pragma once
#include "matmem/models/layers/cells.hpp"

namespace matmem::testing {
template <class ModelConfig>  // NTMConfig or DNCConfig
ModelConfig small_memory_model(CellKind controller, int reads) {
  ModelConfig c;
  c.controller = controller;
  c.layers = {{3, 4}, {3, 3}};
  c.slots = 5;
  c.slot_rows = 2;
  c.slot_cols = 3;
  c.read_heads = reads;
  c.input_rows = 3;
  c.input_cols = 2;
  c.output_rows = 2;
  c.output_cols = 2;
  return c;
}
}  // namespace matmem::testing
