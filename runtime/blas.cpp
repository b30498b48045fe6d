// The only translation unit that includes OpenBLAS's cblas.h (xtensor-blas declares its own CBLAS
// prototypes, which clash with it) and LIBXSMM's header.
//
// float32 GEMMs go to a LIBXSMM kernel when it has one for the call, else to OpenBLAS. LIBXSMM generates
// (JIT, once per shape) kernels for small matrices; on the NTM's shapes they measured, hot, per call:
// 240x15x15 NN 1.07 µs against OpenBLAS's 1.72, 15x15x240 TN (β = 1) 1.07 against 2.02, 96x6x15 NN 0.39
// against 0.67, 96x15x6 NN 0.16 against 0.31. LIBXSMM 1.17 is column-major and generates no kernel when B
// is transposed (row-major NT and TT): an NT product with k < 32 gets B transposed into scratch first
// (kTransposeBelowK, below); other NT and TT products, alpha ≠ 1, β other than 0 or 1, and products of more
// than LIBXSMM's own small-matrix bound (64³ multiply-adds: its kernels do not block for the caches, and the
// bench's 1024³ peak measurement ran at 28 GFLOP/s through one, ~90 through OpenBLAS) stay with OpenBLAS.
// float64 (gradient checks) always goes to OpenBLAS.
#include "matmem/runtime/blas.hpp"

#include <array>
#include <cstring>
#include <vector>

#include <cblas.h>
#include <libxsmm.h>
#include <xsimd/xsimd.hpp>

namespace matmem::blas {
namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }

// Row-major C = op(A) B is column-major Cᵀ = Bᵀ op(A)ᵀ: an n x m product with b first and a second,
// a's transposition becoming the second operand's. Kernels are cached per thread by call shape (LIBXSMM's
// own registry lookup costs about 45 ns, as much as the smallest products).
struct XsmmKey {
  std::int64_t m, n, k, lda, ldb, ldc;
  int flags;
  bool operator==(const XsmmKey&) const = default;
};
struct XsmmEntry {
  XsmmKey key{-1, -1, -1, -1, -1, -1, -1};
  libxsmm_smmfunction kernel = nullptr;  // nullptr: LIBXSMM has none for this shape
};
libxsmm_smmfunction xsmm_kernel(const XsmmKey& key) {
  thread_local std::array<XsmmEntry, 256> cache;
  // Independent products, so the hash is a few cycles deep rather than a chain of seven multiplies.
  const auto mix = [](std::int64_t v, std::uint64_t odd) { return std::uint64_t(v) * odd; };
  const std::uint64_t h = mix(key.m, 0x9E3779B97F4A7C15ULL) ^ mix(key.n, 0xC2B2AE3D27D4EB4FULL) ^
                          mix(key.k, 0x165667B19E3779F9ULL) ^ mix(key.lda, 0xD6E8FEB86659FD93ULL) ^
                          mix(key.ldb, 0xFF51AFD7ED558CCDULL) ^ mix(key.ldc, 0xC4CEB9FE1A85EC53ULL) ^
                          mix(key.flags, 0x27D4EB2F165667C5ULL);
  XsmmEntry& e = cache[(h >> 32) % cache.size()];
  if (!(e.key == key)) {
    const libxsmm_blasint M = key.n, N = key.m, K = key.k, lda = key.ldb, ldb = key.lda, ldc = key.ldc;
    const float alpha = 1, beta = (key.flags & LIBXSMM_GEMM_FLAG_BETA_0) ? 0.0f : 1.0f;
    e.key = key;
    e.kernel = libxsmm_smmdispatch(M, N, K, &lda, &ldb, &ldc, &alpha, &beta, &key.flags, nullptr);
  }
  return e.kernel;
}

// y_j = alpha <a, row j of B> + beta y_j for n rows of k values (row stride ldb), four rows at a time with a SIMD
// accumulator each: a row-major product x Bᵀ with one row x (a batch-1 step's Ĝ Vᵀ through a 100 x 400 V).
// OpenBLAS's gemv took a fifth of that step here, its generic kernel for a CPU it does not know.
void rows_dot(std::int64_t n, std::int64_t k, float alpha, const float* b, std::int64_t ldb, const float* a,
              float beta, float* y) {
  using V = xsimd::batch<float>;
  constexpr std::int64_t W = V::size;
  const std::int64_t body = k / W * W;
  auto finish = [&](std::int64_t j, V acc) {
    float s = xsimd::hadd(acc);
    for (std::int64_t q = body; q < k; ++q) s += a[q] * b[j * ldb + q];
    y[j] = alpha * s + (beta == 0.0f ? 0.0f : beta * y[j]);
  };
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float *r0 = b + j * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb, *r3 = r2 + ldb;
    V s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
    for (std::int64_t q = 0; q < body; q += W) {
      const V x = V::load_unaligned(a + q);
      s0 = xsimd::fma(x, V::load_unaligned(r0 + q), s0);
      s1 = xsimd::fma(x, V::load_unaligned(r1 + q), s1);
      s2 = xsimd::fma(x, V::load_unaligned(r2 + q), s2);
      s3 = xsimd::fma(x, V::load_unaligned(r3 + q), s3);
    }
    finish(j, s0), finish(j + 1, s1), finish(j + 2, s2), finish(j + 3, s3);
  }
  for (; j < n; ++j) {
    V s(0.0f);
    for (std::int64_t q = 0; q < body; q += W) s = xsimd::fma(V::load_unaligned(a + q), V::load_unaligned(b + j * ldb + q), s);
    finish(j, s);
  }
}

// A row-major NT product with k below this goes to LIBXSMM with B transposed first (scratch, k x n).
// OpenBLAS 0.3 takes its small-matrix kernel for such a product only from k = 32 on, and below it packs
// both operands for its general kernel: per call, hot, 30x15x15 (the U gradients of a batch-1 step) took
// 660-1,310 ns through OpenBLAS and 240-280 through the transposition and LIBXSMM, 15x32x30 (batch 2)
// 920-1,320 against 820-980; from k = 48 on OpenBLAS was the faster.
constexpr std::int64_t kTransposeBelowK = 32;

bool xsmm_gemm(bool ta, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
               const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  const int flags = (ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0) | (beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : 0);
  const libxsmm_smmfunction f = xsmm_kernel({m, n, k, lda, ldb, ldc, flags});
  if (f) f(b, a, c);
  return f != nullptr;
}
}  // namespace

template <>
void gemm<float>(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && m * n * k <= LIBXSMM_CONFIG_MAX_MNK) {
    if (!tb && xsmm_gemm(ta, m, n, k, a, lda, b, ldb, beta, c, ldc)) return;
    if (tb && !ta && k < kTransposeBelowK) {  // B is n x k: bt = Bᵀ, k x n
      thread_local std::vector<float> bt;
      bt.resize(std::size_t(k * n));
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t q = 0; q < k; ++q) bt[std::size_t(q * n + j)] = b[j * ldb + q];
      if (xsmm_gemm(false, m, n, k, a, lda, bt.data(), n, beta, c, ldc)) return;
    }
  }
  // A product with one row or one column left to OpenBLAS is a matrix-vector product: sgemv reads the matrix
  // once where sgemm packs it first (a batch-1 step's Ĝ Vᵀ through a 100 x 400 V: its packing was a fifth of
  // the step).
  if (m == 1 && tb && !ta) return rows_dot(n, k, alpha, b, ldb, a, beta, c);
  if (m == 1) {  // cᵀ = op(B)ᵀ op(A)ᵀ: B (n x k when transposed, else k x n) times a's k values
    cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, int(tb ? n : k), int(tb ? k : n), alpha, b, int(ldb),
                a, ta ? int(lda) : 1, beta, c, 1);
    return;
  }
  if (n == 1) {  // c = op(A) op(B): A (k x m when transposed, else m x k) times b's k values
    cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, int(ta ? k : m), int(ta ? m : k), alpha, a, int(lda),
                b, tb ? 1 : int(ldb), beta, c, int(ldc));
    return;
  }
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

const char* core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

const char* fitting_core() {
#if defined(__x86_64__)
  if (std::strcmp(core_name(), "Prescott") != 0 && std::strcmp(core_name(), "prescott") != 0) return nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
#endif
  return nullptr;
}

}  // namespace matmem::blas
