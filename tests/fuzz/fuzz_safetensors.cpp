// Fuzz target: a checkpoint file (`matmem train --resume DIR`, `matmem eval --checkpoint DIR`), read with
// read_safetensors, and the shape of every tensor it accepts.
#include <cstddef>
#include <cstdint>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  matmem::fuzz::MemoryFile file(data, size);
  matmem::TensorFile read;
  try {
    read = matmem::read_safetensors(file.path());
  } catch (const matmem::Error&) {
    return 0;
  }
  for (const auto& [name, t] : read.tensors) (void)t.shape().str();
  return 0;
}
