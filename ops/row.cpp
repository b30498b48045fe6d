// row: y = row h of x.  x:[B,H,N] (a stack of weightings, as multi-key cosine_similarity gives) -> [B,N]
//   grad_x[row h] += g.  In matmem's layout row h is one contiguous block of B·N values.
#include <algorithm>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
template <class T>
struct RowKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t n = c.y_shape.numel();
    std::copy(c.x[0] + c.attrs.i[0] * n, c.x[0] + (c.attrs.i[0] + 1) * n, c.y);
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    const std::int64_t n = c.y_shape.numel();
    T* g = c.grad_x[0] + c.attrs.i[0] * n;
    for (std::int64_t k = 0; k < n; ++k) g[k] += c.grad_y[k];
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {0.0, double(y.numel())}; }
constexpr OpDef kOp = make_op<RowKernel>("row", flops);
}  // namespace

Var row(Var x, std::int64_t h) {
  const Shape& s = x.shape();
  if (s.slots != 1) ops::shape_error("row", "x must be [B,H,N] (a batch of matrices)", x);
  if (h < 0 || h >= s.rows)
    throw ShapeError(fmt::format("row: row {} of {} does not exist (rows 0..{})", h, s.str(), s.rows - 1));
  OpAttrs attrs;
  attrs.i[0] = h;
  return x.tape->apply(kOp, {x}, weighting(s.batch, s.cols), attrs);
}

OpEntry row_entry() {
  return {"row", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"x", random_tensor(rng, matrices(d.batch, 3, d.slots))}};
            sample.apply = [](Tape&, std::span<const Var> x) { return add(row(x[0], 2), row(x[0], 0)); };
            return sample;
          }};
}

}  // namespace matmem
