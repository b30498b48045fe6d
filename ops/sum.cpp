// sum: y = a Σ_k x_k with a = 1 (sum) or 1/count (mean), attrs f[0].  grad_x += a g.  x:[any] -> [1,1,1]
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
template <class T>
struct SumKernel {
  static void forward(const OpCall<T>& c) {
    T total = 0;
    const std::int64_t n = c.x_shape[0].numel();
    for (std::int64_t k = 0; k < n; ++k) total += c.x[0][k];
    c.y[0] = T(c.attrs.f[0]) * total;
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    const T g = T(c.attrs.f[0]) * c.grad_y[0];
    const std::int64_t n = c.x_shape[0].numel();
    for (std::int64_t k = 0; k < n; ++k) c.grad_x[0][k] += g;
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) { return {double(x[0].numel()), double(x[0].numel())}; }
constexpr OpDef kOp = make_op<SumKernel>("sum", flops);

Var scaled_sum(Var x, double a) {
  OpAttrs attrs;
  attrs.f[0] = a;
  return x.tape->apply(kOp, {x}, scalars(1), attrs);
}
}  // namespace

Var sum(Var x) { return scaled_sum(x, 1.0); }
Var mean(Var x) { return scaled_sum(x, 1.0 / double(x.shape().numel())); }

OpEntry sum_entry() {
  return {"sum", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &mean, -1.0, 1.0); }};
}

}  // namespace matmem
