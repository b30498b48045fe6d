// mse: L = (1/n) Σ_k (x_k - t_k)².   x, t:[any] -> [1,1,1]
//   grad_x += 2 g (x - t) / n,   grad_t -= 2 g (x - t) / n
#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct MseKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t n = c.x_shape[0].numel();
    T total = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      const T d = c.x[0][k] - c.x[1][k];
      total += d * d;
    }
    c.y[0] = total / T(n);
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t n = c.x_shape[0].numel();
    const T s = T(2) * c.grad_y[0] / T(n);
    T *gx = c.grad_x[0], *gt = c.grad_x[1];
    for (std::int64_t k = 0; k < n; ++k) {
      const T d = s * (c.x[0][k] - c.x[1][k]);
      if (gx) gx[k] += d;
      if (gt) gt[k] -= d;
    }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) { return {3.0 * x[0].numel(), 3.0 * x[0].numel()}; }
constexpr OpDef kOp = make_op<MseKernel>("mse", flops);
}  // namespace

Var mse(Var x, Var target) {
  ops::same_shape("mse", x, target);
  return x.tape->apply(kOp, {x, target}, scalars(1));
}

OpEntry mse_entry() {
  return {"mse", [](Rng& rng, SampleSize s) { return binary_sample(rng, s, &mse, false); }};
}

}  // namespace matmem
