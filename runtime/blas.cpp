// The only translation unit that includes OpenBLAS's cblas.h (xtensor-blas declares its own CBLAS
// prototypes, which clash with it).
#include "runtime/blas.hpp"

#include <cblas.h>

namespace matmem::blas {
namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }
}  // namespace

template <>
void gemm<float>(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c,
              int(ldc));
}

template <>
void gemm<double>(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
                  std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c,
              int(ldc));
}

void use_single_thread() { openblas_set_num_threads(1); }

}  // namespace matmem::blas
