// attention_read: multi-attention over the rows of a matrix (001 §2.1, eq. 4: s_j = α_jᵀ P).
//   Z_b = Q_b P_bᵀ  (k × m),   A_b = softmax of each row of Z_b (each query's weights over P's m rows),
//   Y_b = A_b P_b   (k × d):   row j of Y_b is s_j = α_jᵀ P_b with α_j = row j of A_b.   Q:[B,k,d], P:[B,m,d].
// With G_b the upstream gradient, D = G_b P_bᵀ and E = A ⊙ (D − rowsum(A ⊙ D)) (the softmax's backward):
//   grad_P_b += A_bᵀ G_b + Eᵀ Q_b,   grad_Q_b += E P_b.
// The dot products are not scaled: the queries are learned, and their network sets the scale.
// In matmem's layout (runtime/shape.hpp) sample b's matrix is the column block at b·d of an r × (B·d) matrix,
// so every product is one GEMM per sample with leading dimension B·d. A is saved (B·k·m elements); backward
// takes k·m of scratch for E.
#include "matmem/ops/attention_read.hpp"

#include <algorithm>
#include <cmath>

#include "matmem/ops/check.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/blas.hpp"

namespace matmem {
namespace {
template <class T>
struct AttentionReadKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.x_shape[0].batch, k = c.x_shape[0].rows, d = c.x_shape[0].cols, m = c.x_shape[1].rows;
    const std::int64_t ld = B * d;
    for (std::int64_t b = 0; b < B; ++b) {
      T* a = c.saved + b * k * m;
      blas::gemm<T>(false, true, k, m, d, T(1), c.x[0] + b * d, ld, c.x[1] + b * d, ld, T(0), a, m);
      for (std::int64_t j = 0; j < k; ++j) {  // softmax of row j, its maximum subtracted first
        T* z = a + j * m;
        const T top = *std::max_element(z, z + m);
        T sum = 0;
        for (std::int64_t i = 0; i < m; ++i) sum += z[i] = std::exp(z[i] - top);
        for (std::int64_t i = 0; i < m; ++i) z[i] /= sum;
      }
      blas::gemm<T>(false, false, k, d, m, T(1), a, m, c.x[1] + b * d, ld, T(0), c.y + b * d, ld);
    }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.x_shape[0].batch, k = c.x_shape[0].rows, d = c.x_shape[0].cols, m = c.x_shape[1].rows;
    const std::int64_t ld = B * d;
    T *gq = c.grad_x[0], *gp = c.grad_x[1], *e = c.scratch;
    for (std::int64_t b = 0; b < B; ++b) {
      const T *a = c.saved + b * k * m, *g = c.grad_y + b * d, *q = c.x[0] + b * d, *p = c.x[1] + b * d;
      blas::gemm<T>(false, true, k, m, d, T(1), g, ld, p, ld, T(0), e, m);  // D = G Pᵀ
      for (std::int64_t j = 0; j < k; ++j) {
        T* row = e + j * m;
        const T* w = a + j * m;
        T dot = 0;
        for (std::int64_t i = 0; i < m; ++i) dot += w[i] * row[i];
        for (std::int64_t i = 0; i < m; ++i) row[i] = w[i] * (row[i] - dot);
      }
      if (gp) {
        blas::gemm<T>(true, false, m, d, k, T(1), a, m, g, ld, T(1), gp + b * d, ld);
        blas::gemm<T>(true, false, m, d, k, T(1), e, m, q, ld, T(1), gp + b * d, ld);
      }
      if (gq) blas::gemm<T>(false, false, k, d, m, T(1), e, m, p, ld, T(1), gq + b * d, ld);
    }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double B = double(x[0].batch), k = double(x[0].rows), d = double(x[0].cols), m = double(x[1].rows);
  return {B * (4 * k * m * d + 4 * k * m), B * (8 * k * m * d + 4 * k * m)};
}
constexpr OpDef kOp = as_gemm(make_op<AttentionReadKernel>("attention_read", flops));
}  // namespace

Var attention_read(Var queries, Var rows) {
  ops::same_tape("attention_read", queries, rows);
  const Shape &q = queries.shape(), &p = rows.shape();
  if (q.slots != 1 || p.slots != 1)
    ops::shape_error("attention_read", "Q and P must be batches of matrices [B,k,d] and [B,m,d], not memories",
                     queries, rows);
  if (q.batch != p.batch || q.cols != p.cols)
    ops::shape_error("attention_read", "Q [B,k,d] and P [B,m,d] must have the same batch and columns", queries, rows);
  return queries.tape->apply(kOp, {queries, rows}, matrices(q.batch, q.rows, q.cols), OpAttrs{},
                             q.batch * q.rows * p.rows, q.rows * p.rows);
}

OpEntry attention_read_entry() {
  return {"attention_read", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            // Queries of a size that gives weights far from uniform, so the softmax's backward matters.
            sample.inputs = {{"Q", random_tensor(rng, matrices(d.batch, d.rows, d.cols), -2.0, 2.0)},
                             {"P", random_tensor(rng, matrices(d.batch, d.rows2, d.cols))}};
            sample.apply = [](Tape&, std::span<const Var> v) { return attention_read(v[0], v[1]); };
            return sample;
          }};
}

}  // namespace matmem
