// transpose: y_b = x_bᵀ.  x:[B,r,c] -> [B,c,r];  grad_x_b += (grad_y_b)ᵀ.
// In matmem's layout element (b, i, j) of a [B,r,c] batch is at (i·B + b)·c + j, so y(b, j, i) is at
// (j·B + b)·r + i.
#include "matmem/ops/transpose.hpp"

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct TransposeKernel {
  static void forward(const OpCall<T>& c) {
    const Shape& s = c.x_shape[0];
    const std::int64_t B = s.batch, r = s.rows, n = s.cols;
    const T* x = c.x[0];
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < n; ++j) c.y[(j * B + b) * r + i] = x[(i * B + b) * n + j];
  }
  static void backward(const OpCall<T>& c) {
    T* g = c.grad_x[0];
    if (!g) return;
    const Shape& s = c.x_shape[0];
    const std::int64_t B = s.batch, r = s.rows, n = s.cols;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0; j < n; ++j) g[(i * B + b) * n + j] += c.grad_y[(j * B + b) * r + i];
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {0.0, double(y.numel())}; }
constexpr OpDef kOp = make_op<TransposeKernel>("transpose", flops);
}  // namespace

Var transpose(Var x) {
  const Shape& s = x.shape();
  if (s.slots != 1) ops::shape_error("transpose", "x must be [B,r,c] (a batch of matrices) or a parameter [r,c]", x);
  return x.tape->apply(kOp, {x}, matrices(s.batch, s.cols, s.rows), OpAttrs{});
}

OpEntry transpose_entry() {
  return {"transpose", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"x", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"U", random_tensor(rng, parameter(d.cols2, d.rows))}};
            // A batch transposed, and a parameter transposed and used as a bilinear map's U (the decoder's use).
            sample.apply = [](Tape&, std::span<const Var> x) {
              return bilinear(transpose(x[0]), x[0].tape->constant(parameter(x[0].shape().cols, 2), 0.5),
                              transpose(x[1]));
            };
            return sample;
          }};
}

}  // namespace matmem
