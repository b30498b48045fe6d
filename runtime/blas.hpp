// GEMM on row-major matrices, through OpenBLAS's CBLAS (single-threaded: matmem's matrices are small and
// OpenBLAS's own threading costs more than it gains there; runtime/threads decides parallelism).
//
//   C = alpha * op(A) * op(B) + beta * C,  op(X) = X or X^T,  op(A): m x k,  op(B): k x n,  C: m x n.
// Measured on one core: cblas_sgemm and xtensor-blas's cxxblas::gemm take the same time (0.24 µs for
// 15x15x15, about 1.5 µs for 15x240x15: both end in OpenBLAS's sgemm), so the plain CBLAS call is used and
// no xtensor header reaches the kernels.
#pragma once
#include <cstdint>

namespace matmem::blas {

template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc);

// Pins OpenBLAS to one thread (called once by everything that runs kernels).
void use_single_thread();

// The name of the kernels OpenBLAS runs (its openblas_get_corename()).
const char* core_name();

// OpenBLAS chooses its kernels by CPU model as it is loaded, and falls back to its Prescott (SSE3) kernels for a
// model it does not know: Debian 12's OpenBLAS 0.3.21 does so on recent Intel CPUs (family 6 model 207, an AVX-512
// Xeon, measured: SGEMM 1024³ at 32 GFLOP/s against 152 with the Cooperlake kernels). OPENBLAS_CORETYPE names the
// kernels instead, but is read only as the library loads. Returns the OPENBLAS_CORETYPE for this CPU's
// instruction set when OpenBLAS runs its Prescott kernels on a CPU with AVX or more (Cooperlake for AVX-512 with
// BF16, SkylakeX for AVX-512, Haswell for AVX2 with FMA, Sandybridge for AVX), else nullptr.
const char* fitting_core();

}  // namespace matmem::blas
