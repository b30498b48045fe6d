// Stops a process that loads libmatmem on a CPU lacking an extension the library was built for, with a
// message naming it, before any of the library's code can die of an illegal instruction.
//
// This file is compiled for the baseline x86-64 instruction set (runtime/CMakeLists.txt), and its check runs
// as a constructor of priority 101: before the library's other static initialisers, which are compiled with
// the library's flags. MATMEM_CPU_MISSING (extensions separated by spaces or commas) makes the check treat
// those as missing: the tests use it to see the refusal on a CPU that has them all.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "matmem/runtime/isa.hpp"

extern "C" const char matmem_library_isa_text[];

namespace matmem {
namespace {

// Only C strings and libc here: an inline function or template of the C++ library instantiated in this file
// might be merged by the linker with a copy compiled for the library's instruction set.

// __builtin_cpu_supports takes a string literal, so the extensions it is asked about are spelled out here.
bool cpu_has(const char* f) {
#if defined(__x86_64__)
  __builtin_cpu_init();
#define MATMEM_CPU_HAS(name) \
  if (std::strcmp(f, name) == 0) return __builtin_cpu_supports(name)
  MATMEM_CPU_HAS("sse3");
  MATMEM_CPU_HAS("ssse3");
  MATMEM_CPU_HAS("sse4.1");
  MATMEM_CPU_HAS("sse4.2");
  MATMEM_CPU_HAS("popcnt");
  MATMEM_CPU_HAS("avx");
  MATMEM_CPU_HAS("avx2");
  MATMEM_CPU_HAS("fma");
  MATMEM_CPU_HAS("bmi");
  MATMEM_CPU_HAS("bmi2");
  MATMEM_CPU_HAS("avx512f");
  MATMEM_CPU_HAS("avx512cd");
  MATMEM_CPU_HAS("avx512bw");
  MATMEM_CPU_HAS("avx512dq");
  MATMEM_CPU_HAS("avx512vl");
  MATMEM_CPU_HAS("avx512vnni");
  MATMEM_CPU_HAS("avx512bf16");
  MATMEM_CPU_HAS("avx512ifma");
  MATMEM_CPU_HAS("avx512vbmi");
  MATMEM_CPU_HAS("avx512vbmi2");
  MATMEM_CPU_HAS("avx512bitalg");
  MATMEM_CPU_HAS("avx512vpopcntdq");
  MATMEM_CPU_HAS("gfni");
  MATMEM_CPU_HAS("vpclmulqdq");
#undef MATMEM_CPU_HAS
#endif
  return true;  // the base ("x86-64"), and any other architecture: nothing to check
}

// Whether `word` is one of the words of `list` (separated by spaces or commas).
bool listed(const char* list, const char* word) {
  const std::size_t n = std::strlen(word);
  for (const char* p = list; p && *p;) {
    const std::size_t len = std::strcspn(p, " ,");
    if (len == n && std::strncmp(p, word, n) == 0) return true;
    p += len;
    if (*p) ++p;
  }
  return false;
}

// The library's extensions that this CPU lacks (or MATMEM_CPU_MISSING names), into `out`.
void find_missing(char* out, std::size_t size) {
  out[0] = '\0';
  const char* pretend = std::getenv("MATMEM_CPU_MISSING");
  const char* p = std::strchr(matmem_library_isa_text, ' ');  // past the base
  while (p && *p) {
    ++p;
    char feature[32] = {};
    const std::size_t len = std::strcspn(p, " ");
    if (len > 0 && len < sizeof feature) {
      std::memcpy(feature, p, len);
      if (!cpu_has(feature) || listed(pretend, feature)) {
        if (out[0]) std::strncat(out, " ", size - std::strlen(out) - 1);
        std::strncat(out, feature, size - std::strlen(out) - 1);
      }
    }
    p += len;
  }
}

__attribute__((constructor(101))) void stop_on_missing_cpu_features() {
  char missing[512];
  find_missing(missing, sizeof missing);
  if (!missing[0]) return;
  std::fprintf(stderr,
               "matmem: libmatmem was built for the instruction set \"%s\", and this CPU lacks %s. Build matmem on "
               "this machine (tools/setup.sh), or configure it with -DMATMEM_NATIVE=OFF for a portable build.\n",
               matmem_library_isa_text, missing);
  std::fflush(stderr);
  _exit(70);
}

}  // namespace

std::string missing_cpu_features() {
  char missing[512];
  find_missing(missing, sizeof missing);
  return missing;
}

}  // namespace matmem
