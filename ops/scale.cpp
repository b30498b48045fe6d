// scale (affine): y = a x + b with constants a, b (attrs f[0], f[1]); grad_x += a g.
// scale(x, a) is a x; one_minus(x) is 1 - x.
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
template <class T>
struct ScaleKernel {
  static void forward(const OpCall<T>& c) {
    const T a = T(c.attrs.f[0]), b = T(c.attrs.f[1]);
    const T* x = c.x[0];
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.y[k] = a * x[k] + b;
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    const T a = T(c.attrs.f[0]);
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.grad_x[0][k] += a * c.grad_y[k];
  }
};
constexpr OpDef kOp = make_op<ScaleKernel>("scale", ops::elementwise_flops);
}  // namespace

Var affine(Var x, double a, double b) {
  OpAttrs attrs;
  attrs.f[0] = a;
  attrs.f[1] = b;
  return x.tape->apply(kOp, {x}, x.shape(), attrs);
}
Var scale(Var x, double a) { return affine(x, a, 0.0); }
Var one_minus(Var x) { return affine(x, -1.0, 1.0); }

OpEntry scale_entry() {
  return {"scale", [](Rng& rng, SampleSize s) {
            OpSample sample = unary_sample(rng, s, &one_minus, -2.0, 2.0);
            sample.apply = [](Tape&, std::span<const Var> x) { return affine(x[0], -1.7, 0.3); };
            return sample;
          }};
}

}  // namespace matmem
