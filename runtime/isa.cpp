// The instruction set libmatmem was built for. This file is compiled with the library's own flags, so
// MATMEM_COMPILED_ISA expands to the extensions the rest of the library may use. It holds data only: the
// check that runs before the library's code (cpu_check.cpp) reads it.
#include "matmem/runtime/isa.hpp"

#include "matmem/version.hpp"

extern "C" const char matmem_library_isa_text[] = MATMEM_COMPILED_ISA;

namespace matmem {
const char* library_isa() { return matmem_library_isa_text; }
const char* version() { return MATMEM_VERSION_STRING; }
}  // namespace matmem
