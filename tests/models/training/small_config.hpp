// Shared by the trainer tests: a small, fast training config (2x3 matrices, two small layers, a 6-slot memory
// of 2x2 matrices, sequences of at most `max_length` frames), an empty directory per test, and a bitwise
// comparison of two models' parameters (and of a trainer's parameters and optimiser state).
#pragma once
#include <cstring>
#include <filesystem>
#include <string>

#include "matmem/autodiff/parameters.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/models/training/trainer.hpp"

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

// An empty directory `name` under the system's temporary directory, in one of `suite`'s.
inline std::string temp_dir(const std::string& suite, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / suite / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The same parameters, in the same order, with the same bytes.
inline bool same_bits(const ParameterStore& a, const ParameterStore& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].name != b[k].name || std::memcmp(a[k].value.raw(), b[k].value.raw(), a[k].value.bytes()) != 0) return false;
  return true;
}

// Every parameter's and optimiser state's bytes, in order.
inline std::string state_bytes(Trainer& t) {
  std::string out;
  for (const auto& p : t.model().params())
    out.append(static_cast<const char*>(p->value.raw()), p->value.bytes());
  for (const auto& [name, s] : t.optimizer().state_tensors()) out.append(static_cast<const char*>(s->raw()), s->bytes());
  return out;
}

}  // namespace matmem::testing
