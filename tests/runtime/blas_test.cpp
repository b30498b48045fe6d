#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/random.hpp"

using namespace matmem;

namespace {
// C = alpha op(A) op(B) + beta C in double, row-major with leading dimensions.
template <class T>
void reference(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, double beta, std::vector<double>& c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p)
        s += double(ta ? a[p * lda + i] : a[i * lda + p]) * double(tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[std::size_t(i * ldc + j)] = alpha * s + beta * c[std::size_t(i * ldc + j)];
    }
}

template <class T>
void check_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, T beta, std::int64_t pad) {
  Rng rng(7);
  const std::int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
  std::vector<T> a(std::size_t((ta ? k : m) * lda)), b(std::size_t((tb ? n : k) * ldb)), c(std::size_t(m * ldc));
  for (T& v : a) v = T(rng.uniform(-1, 1));
  for (T& v : b) v = T(rng.uniform(-1, 1));
  for (T& v : c) v = T(rng.uniform(-1, 1));
  std::vector<double> want(c.begin(), c.end());
  reference(ta, tb, m, n, k, double(alpha), a.data(), lda, b.data(), ldb, double(beta), want, ldc);
  blas::gemm<T>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  const double tol = sizeof(T) == 4 ? 1e-5 * double(k) : 1e-12 * double(k);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) {
      const auto q = std::size_t(i * ldc + j);
      INFO("C(" << i << "," << j << ")");
      if (j < n)
        CHECK(double(c[q]) == Approx(want[q]).margin(tol));
      else
        CHECK(double(c[q]) == want[q]);  // padding past n is untouched
    }
}
}  // namespace

// float32 GEMMs go through LIBXSMM's kernels where it has them (no transposed B, or a transposed B with k < 32
// transposed first; alpha 1, beta 0 or 1, at most 64³ multiply-adds) and OpenBLAS otherwise; float64 through
// OpenBLAS. Every case against a float64 reference, with padded leading dimensions and the shapes of an NTM
// step (batched bilinear maps of 15x15 states, scalar projections, U gradients at batches 1 and 2).
TEST_CASE("gemm matches a reference for every transposition, alpha, beta and padding", "[runtime][blas]") {
  struct Shape3 { std::int64_t m, n, k; };
  for (Shape3 s : {Shape3{240, 15, 15}, Shape3{15, 15, 240}, Shape3{96, 6, 15}, Shape3{16, 1, 15}, Shape3{3, 5, 7},
                   Shape3{1, 1, 1}, Shape3{33, 17, 65}, Shape3{70, 65, 66}, Shape3{30, 15, 15},
                   Shape3{15, 32, 30}, Shape3{6, 5, 31},
                   // one row or one column past LIBXSMM's cases: OpenBLAS's gemv (blas.cpp)
                   Shape3{1, 100, 400}, Shape3{1, 65, 70}, Shape3{90, 1, 70}, Shape3{1, 1, 300}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float alpha : {1.0f, 2.0f})
          for (float beta : {0.0f, 1.0f, 0.5f})
            for (std::int64_t pad : {0, 3}) {
              INFO((ta ? "T" : "N") << (tb ? "T" : "N") << " " << s.m << "x" << s.n << "x" << s.k << " alpha "
                                    << alpha << " beta " << beta << " pad " << pad);
              check_gemm<float>(ta, tb, s.m, s.n, s.k, alpha, beta, pad);
              check_gemm<double>(ta, tb, s.m, s.n, s.k, double(alpha), double(beta), pad);
            }
}
