/// @file
/// The instruction set code was compiled for, and the one libmatmem was built for.
///
/// libmatmem is built with -march=native by default (CMake option MATMEM_NATIVE; OFF gives a portable
/// x86-64 build). Its instruction set is recorded as a list of the x86 extensions the compiler was allowed to
/// use: MATMEM_COMPILED_ISA, expanded in libmatmem's own sources, is library_isa(). When the library is
/// loaded on a CPU that lacks one of them, it prints which and stops the process (exit status 70) before any
/// of its code runs, instead of dying of an illegal instruction. A plugin (models/plugin.hpp) records
/// MATMEM_COMPILED_ISA as expanded in its own sources and is refused unless it equals library_isa().
#pragma once
#include <string>

/// @cond MATMEM_ISA_PARTS
#if defined(__x86_64__)
#define MATMEM_ISA_BASE "x86-64"
#elif defined(__aarch64__)
#define MATMEM_ISA_BASE "aarch64"
#else
#define MATMEM_ISA_BASE "other"
#endif
#ifdef __SSE3__
#define MATMEM_ISA_SSE3 " sse3"
#else
#define MATMEM_ISA_SSE3 ""
#endif
#ifdef __SSSE3__
#define MATMEM_ISA_SSSE3 " ssse3"
#else
#define MATMEM_ISA_SSSE3 ""
#endif
#ifdef __SSE4_1__
#define MATMEM_ISA_SSE41 " sse4.1"
#else
#define MATMEM_ISA_SSE41 ""
#endif
#ifdef __SSE4_2__
#define MATMEM_ISA_SSE42 " sse4.2"
#else
#define MATMEM_ISA_SSE42 ""
#endif
#ifdef __POPCNT__
#define MATMEM_ISA_POPCNT " popcnt"
#else
#define MATMEM_ISA_POPCNT ""
#endif
#ifdef __AVX__
#define MATMEM_ISA_AVX " avx"
#else
#define MATMEM_ISA_AVX ""
#endif
#ifdef __AVX2__
#define MATMEM_ISA_AVX2 " avx2"
#else
#define MATMEM_ISA_AVX2 ""
#endif
#ifdef __FMA__
#define MATMEM_ISA_FMA " fma"
#else
#define MATMEM_ISA_FMA ""
#endif
#ifdef __BMI__
#define MATMEM_ISA_BMI " bmi"
#else
#define MATMEM_ISA_BMI ""
#endif
#ifdef __BMI2__
#define MATMEM_ISA_BMI2 " bmi2"
#else
#define MATMEM_ISA_BMI2 ""
#endif
#ifdef __AVX512F__
#define MATMEM_ISA_AVX512F " avx512f"
#else
#define MATMEM_ISA_AVX512F ""
#endif
#ifdef __AVX512CD__
#define MATMEM_ISA_AVX512CD " avx512cd"
#else
#define MATMEM_ISA_AVX512CD ""
#endif
#ifdef __AVX512BW__
#define MATMEM_ISA_AVX512BW " avx512bw"
#else
#define MATMEM_ISA_AVX512BW ""
#endif
#ifdef __AVX512DQ__
#define MATMEM_ISA_AVX512DQ " avx512dq"
#else
#define MATMEM_ISA_AVX512DQ ""
#endif
#ifdef __AVX512VL__
#define MATMEM_ISA_AVX512VL " avx512vl"
#else
#define MATMEM_ISA_AVX512VL ""
#endif
#ifdef __AVX512VNNI__
#define MATMEM_ISA_AVX512VNNI " avx512vnni"
#else
#define MATMEM_ISA_AVX512VNNI ""
#endif
#ifdef __AVX512BF16__
#define MATMEM_ISA_AVX512BF16 " avx512bf16"
#else
#define MATMEM_ISA_AVX512BF16 ""
#endif
#ifdef __AVX512IFMA__
#define MATMEM_ISA_AVX512IFMA " avx512ifma"
#else
#define MATMEM_ISA_AVX512IFMA ""
#endif
#ifdef __AVX512VBMI__
#define MATMEM_ISA_AVX512VBMI " avx512vbmi"
#else
#define MATMEM_ISA_AVX512VBMI ""
#endif
#ifdef __AVX512VBMI2__
#define MATMEM_ISA_AVX512VBMI2 " avx512vbmi2"
#else
#define MATMEM_ISA_AVX512VBMI2 ""
#endif
#ifdef __AVX512BITALG__
#define MATMEM_ISA_AVX512BITALG " avx512bitalg"
#else
#define MATMEM_ISA_AVX512BITALG ""
#endif
#ifdef __AVX512VPOPCNTDQ__
#define MATMEM_ISA_AVX512VPOPCNTDQ " avx512vpopcntdq"
#else
#define MATMEM_ISA_AVX512VPOPCNTDQ ""
#endif
#ifdef __GFNI__
#define MATMEM_ISA_GFNI " gfni"
#else
#define MATMEM_ISA_GFNI ""
#endif
#ifdef __VPCLMULQDQ__
#define MATMEM_ISA_VPCLMULQDQ " vpclmulqdq"
#else
#define MATMEM_ISA_VPCLMULQDQ ""
#endif
/// @endcond

/// The instruction set the including source file is compiled for: "x86-64" followed by the extensions the
/// compiler may use, e.g. "x86-64 sse3 ssse3 sse4.1 sse4.2 popcnt avx avx2 fma bmi bmi2".
#define MATMEM_COMPILED_ISA                                                                                    \
  MATMEM_ISA_BASE MATMEM_ISA_SSE3 MATMEM_ISA_SSSE3 MATMEM_ISA_SSE41 MATMEM_ISA_SSE42 MATMEM_ISA_POPCNT       \
      MATMEM_ISA_AVX MATMEM_ISA_AVX2 MATMEM_ISA_FMA MATMEM_ISA_BMI MATMEM_ISA_BMI2 MATMEM_ISA_AVX512F           \
          MATMEM_ISA_AVX512CD MATMEM_ISA_AVX512BW MATMEM_ISA_AVX512DQ MATMEM_ISA_AVX512VL                       \
              MATMEM_ISA_AVX512VNNI MATMEM_ISA_AVX512BF16 MATMEM_ISA_AVX512IFMA MATMEM_ISA_AVX512VBMI           \
                  MATMEM_ISA_AVX512VBMI2 MATMEM_ISA_AVX512BITALG MATMEM_ISA_AVX512VPOPCNTDQ MATMEM_ISA_GFNI     \
                      MATMEM_ISA_VPCLMULQDQ

namespace matmem {

/// The instruction set libmatmem was built for, in MATMEM_COMPILED_ISA's form.
const char* library_isa();

/// The version of the loaded libmatmem, "MAJOR.MINOR.PATCH" (matmem/version.hpp has the compiled-against one).
const char* version();

/// The extensions in library_isa() that this CPU lacks, separated by spaces; empty when it has them all.
std::string missing_cpu_features();

}  // namespace matmem
