// Internal: pieces of the batched bilinear maps shared by mat/bilinear (ops/bilinear.cpp, whose header has the
// math) and projections (ops/projections.cpp). A batch [B,r,c] is the r x (B c) matrix X̂, or its (r B) x c
// reshape (runtime/shape.hpp); a parameter [r,c] is a plain row-major matrix.
#pragma once
#include <cstdint>

#include "matmem/autodiff/op.hpp"
#include "matmem/autodiff/tape.hpp"
#include "matmem/ops/fixed.hpp"
#include "matmem/runtime/blas.hpp"

namespace matmem::ops {

// Whether an op that can rebuild a saved buffer of `saved` values with one GEMM over weights of `reread` values
// does so in backward rather than saving it (Tape::recompute_saved): only on a tape whose passes outgrow the cache,
// and only where the buffer is at least a quarter of the weights the GEMM reads again. Where it is far smaller (a
// vector map at one sequence an update: Ẑ = X̂ V_s is one row, V_s the whole map, 1.5 MiB for Graves' 512-unit
// priority sort), writing it out and reading it back costs less than a second pass over the weights. A tape set
// to recompute from 0 bytes (tests of the recomputed path) always does. Saved or recomputed, the values are equal.
inline bool recomputes(const Tape& tape, std::int64_t saved, std::int64_t reread) {
  return tape.recompute_saved() && (tape.recompute_above() == 0 || 4 * saved >= reread);
}

// Up to this many elements V is transposed into scratch so that a product with Vᵀ is an NN GEMM (OpenBLAS's
// small-matrix kernels); larger ones (a vector model's 100x400 V) go straight to an NT GEMM.
constexpr std::int64_t kTransposeV = 1024;

// vt = vᵀ for v: rows x cols.
template <class T>
void transpose(const T* v, std::int64_t rows, std::int64_t cols, T* vt) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) vt[j * rows + i] = v[i * cols + j];
}

// dst[i·ldd + j] = src[i·lds + j] (or += with Add), i < rows, j < cols: a block of a few columns (the NTM heads'
// 1 to 6) moved between a matrix and its place in a wider one, row by row. Widths up to 8 are compile-time
// constants, so each row's moves are unrolled: a loop of 1 to 6 moves per row spent more on its control than
// on the moves (the projections' backward at batch 1, alternating runs).
template <bool Add, class T, class Width>
void move_rows(const T* src, std::int64_t lds, T* dst, std::int64_t ldd, std::int64_t rows, Width cols) {
  for (std::int64_t i = 0; i < rows; ++i, src += lds, dst += ldd)
    for (std::int64_t j = 0; j < std::int64_t(cols); ++j) {
      if constexpr (Add) dst[j] += src[j];
      else dst[j] = src[j];
    }
}
template <bool Add, class T>
void move_columns(const T* src, std::int64_t lds, T* dst, std::int64_t ldd, std::int64_t rows, std::int64_t cols) {
  with_fixed<1, 8>(
      cols, [&](auto width) { move_rows<Add>(src, lds, dst, ldd, rows, width); },
      [&] { move_rows<Add>(src, lds, dst, ldd, rows, cols); });
}

// out = A Vᵀ (assigned), A: m x c', V: c x c' -> m x c; vt: c·c' of scratch, used when V is small.
template <class T>
void times_vt(std::int64_t m, const T* a, const T* v, std::int64_t c, std::int64_t cp, T* vt, T* out) {
  if (c * cp <= kTransposeV) {
    transpose(v, c, cp, vt);
    blas::gemm<T>(false, false, m, c, cp, T(1), a, cp, vt, c, T(0), out, c);
  } else {
    blas::gemm<T>(false, true, m, c, cp, T(1), a, cp, v, cp, T(0), out, c);
  }
}

// grad (k x n) += aᵀ b (a: rows x k, b: rows x n; the weight V's term of a product X V). Left to the tape
// (OpCall::deferral: one GEMM over every time step's rows, before the gradient is read) when copying the rows
// costs less than a pass over the gradient, rows (k + n) < k n: a vector model's weights at batch 1, where each
// step's term is an outer product as large as the weight; else added now.
template <class T>
bool defers(const OpCall<T>& c, std::int64_t rows, std::int64_t k, std::int64_t n) {
  return c.deferral && rows * (k + n) < k * n;
}
template <class T>
void add_at_b(const OpCall<T>& c, int input, T* grad, const T* a, const T* b, std::int64_t rows, std::int64_t k,
              std::int64_t n) {
  if (defers(c, rows, k, n) && c.deferral->defer(input, a, b, rows, k, n)) return;
  blas::gemm<T>(true, false, k, n, rows, T(1), a, k, b, n, T(1), grad, n);
}

// grad_X̂ (n values) += the product gemm(out) writes with β = 0: OpenBLAS 0.3.21's small-matrix kernels run
// these GEMMs 2-3x slower with β = 1, so the product goes straight into a fresh (uninitialised) gradient, or
// into tmp and is then added.
template <class T, class Gemm>
void add_product(T* gx, bool fresh, std::int64_t n, T* tmp, Gemm&& gemm) {
  if (fresh) return gemm(gx);
  gemm(tmp);
  for (std::int64_t k = 0; k < n; ++k) gx[k] += tmp[k];
}

// y += bias over the batch: y[(i B + b) c + j] += bias[i c + j]  (y: [B,r,c], bias: [r,c])
template <class T>
void add_bias(T* y, const T* bias, std::int64_t B, std::int64_t r, std::int64_t c) {
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < c; ++j) y[(i * B + b) * c + j] += bias[i * c + j];
}

// grad_bias += Σ_b G_b:  gb[i c + j] += Σ_b g[(i B + b) c + j]
template <class T>
void add_bias_grad(T* gb, const T* g, std::int64_t B, std::int64_t r, std::int64_t c) {
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < c; ++j) gb[i * c + j] += g[(i * B + b) * c + j];
}

}  // namespace matmem::ops
