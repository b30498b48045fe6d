// A small, fast training config shared by the trainer tests: 2x3 matrices, two small layers, a 6-slot
// memory of 2x2 matrices, sequences of at most `max_length` frames.
#pragma once
#include <string>

#include "models/training/config.hpp"

namespace matmem::testing {

inline Config small_config(const std::string& model, int max_length = 4, int batch = 3) {
  Config c;
  c.set("model", model, "test");
  c.set("model.layers", "\"4x3,3x3\"", "test");
  c.set("task.rows", "2", "test");
  c.set("task.cols", "3", "test");
  c.set("task.max_length", std::to_string(max_length), "test");
  c.set("batch", std::to_string(batch), "test");
  c.set("ntm.slots", "6", "test");
  c.set("ntm.slot_rows", "2", "test");
  c.set("ntm.slot_cols", "2", "test");
  c.set("lr", "0.01", "test");
  return c;
}

}  // namespace matmem::testing
