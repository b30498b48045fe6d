// A plugin that says it was built against matmem 0.0.0: refused, naming both versions.
#include <matmem/models/plugin.hpp>

namespace {
void register_nothing() {}
}  // namespace

extern "C" __attribute__((visibility("default"))) const matmem_plugin_info matmem_plugin = {
    MATMEM_PLUGIN_ABI, "0.0.0", MATMEM_COMPILED_ISA, &register_nothing};
