// Fuzz target: `matmem train --set key=value`, one assignment per input line, each through Config::assign,
// then the layer sizes and the resolved config as config.json holds it.
#include <cstddef>
#include <cstdint>

#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  matmem::Config c;
  for (const std::string& line : matmem::fuzz::lines(data, size)) {
    try {
      c.assign(line, "--set");
    } catch (const matmem::Error&) {
    }
  }
  try {
    (void)c.sizes("model.layers");
  } catch (const matmem::Error&) {
  }
  (void)c.dump();
  return 0;
}
