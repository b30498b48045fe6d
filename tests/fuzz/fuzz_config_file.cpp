// Fuzz target: a config file (`matmem train --config FILE`), read with Config::merge_file, then what the
// trainer reads from a resolved config before it builds anything: the preset lookup, every typed key and
// the layer sizes.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  matmem::fuzz::MemoryFile file(data, size);
  try {
    matmem::Config c;
    c.merge_file(file.path());
    matmem::Config layered;
    layered.apply_preset(c.str("model"), c.str("task"));
    layered.merge_file(file.path());
    for (const matmem::ConfigKey& k : matmem::config_keys()) {
      const auto& v = layered.values().at(k.key);
      if (v.is_string()) (void)layered.str(k.key);
      else if (v.is_boolean()) (void)layered.flag(k.key);
      else if (v.is_number_float()) (void)layered.num(k.key);
      else (void)layered.integer(k.key);
    }
    (void)layered.sizes("model.layers");
    (void)layered.dump();
  } catch (const matmem::Error&) {
  }
  return 0;
}
