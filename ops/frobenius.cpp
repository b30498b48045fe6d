// frobenius: y_b = ⟨a_b, b_b⟩_F = Σ_ij a_bij b_bij.   a, b:[B,r,c] -> [B,1,1]
//   grad_a_b += g_b b_b,   grad_b_b += g_b a_b
// Rows are contiguous in the batch-interleaved layout (runtime/shape.hpp): element (b,i,j) at (i·B + b)·c + j.
#include "matmem/ops/frobenius.hpp"

#include "matmem/ops/check.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct FrobeniusKernel {
  static void forward(const OpCall<T>& c) {
    const Shape& s = c.x_shape[0];
    const std::int64_t B = s.batch, C = s.cols;
    for (std::int64_t b = 0; b < B; ++b) c.y[b] = T(0);
    for (std::int64_t i = 0; i < s.rows; ++i)
      for (std::int64_t b = 0; b < B; ++b) {
        const T *x = c.x[0] + (i * B + b) * C, *z = c.x[1] + (i * B + b) * C;
        T acc = 0;
        for (std::int64_t j = 0; j < C; ++j) acc += x[j] * z[j];
        c.y[b] += acc;
      }
  }
  static void backward(const OpCall<T>& c) {
    const Shape& s = c.x_shape[0];
    const std::int64_t B = s.batch, C = s.cols;
    for (int k = 0; k < 2; ++k) {
      T* g = c.grad_x[k];
      if (!g) continue;
      const T* other = c.x[1 - k];
      for (std::int64_t i = 0; i < s.rows; ++i)
        for (std::int64_t b = 0; b < B; ++b) {
          const std::int64_t o = (i * B + b) * C;
          for (std::int64_t j = 0; j < C; ++j) g[o + j] += c.grad_y[b] * other[o + j];
        }
    }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) { return {2.0 * x[0].numel(), 4.0 * x[0].numel()}; }
constexpr OpDef kOp = make_op<FrobeniusKernel>("frobenius", flops);
}  // namespace

Var frobenius(Var a, Var b) {
  ops::same_tape("frobenius", a, b);
  ops::same_shape("frobenius", a, b);
  if (a.shape().slots != 1) ops::shape_error("frobenius", "needs a batch of matrices [B,r,c], not a memory", a, b);
  return a.tape->apply(kOp, {a, b}, matrices(a.shape().batch, 1, 1));
}

OpEntry frobenius_entry() {
  return {"frobenius", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"a", random_tensor(rng, matrices(d.batch, d.rows, d.cols), -1.0, 1.0)},
                             {"b", random_tensor(rng, matrices(d.batch, d.rows, d.cols), -1.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> v) { return frobenius(v[0], v[1]); };
            return sample;
          }};
}

}  // namespace matmem
