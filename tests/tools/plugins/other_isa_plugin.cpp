// A plugin compiled for the baseline x86-64 (tests/tools/CMakeLists.txt appends -march=x86-64): refused by a
// libmatmem built for more (-march=native), naming both instruction sets.
#include <matmem/models/plugin.hpp>

namespace {
void register_nothing() {}
}  // namespace

MATMEM_PLUGIN(register_nothing)
