// hadamard: y = a ⊙ b, broadcasting (ops/elementwise.hpp).  grad_a += Σ_broadcast g ⊙ b, grad_b += Σ_broadcast g ⊙ a.
#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
template <class T>
struct HadamardKernel {
  static void forward(const OpCall<T>& c) {
    const T *a = c.x[0], *b = c.x[1];
    ops::for_each_broadcast(c.y_shape, c.x_shape[0], c.x_shape[1],
                            [&](std::int64_t o, std::int64_t oa, std::int64_t ob) { c.y[o] = a[oa] * b[ob]; });
  }
  static void backward(const OpCall<T>& c) {
    const T *a = c.x[0], *b = c.x[1];
    T *ga = c.grad_x[0], *gb = c.grad_x[1];
    const Shape &y = c.y_shape, &as = c.x_shape[0], &bs = c.x_shape[1];
    if (as.cols != bs.cols && y.cols > 1) {
      // One operand is broadcast along rows (a per-item scalar times a weighting, say): its gradient per row
      // is a dot product, taken as one SIMD reduction instead of a chain of += into one element.
      ops::for_each_broadcast_row(y, as, bs, [&](std::int64_t o, std::int64_t oa, std::int64_t ob, std::int64_t ja,
                                                 std::int64_t jb, std::int64_t n) {
        const T* g = c.grad_y + o;
        if (ga) {
          if (!ja) ga[oa] += ops::simd::dot(g, b + ob, n);
          else for (std::int64_t j = 0; j < n; ++j) ga[oa + j] += g[j] * b[ob];
        }
        if (gb) {
          if (!jb) gb[ob] += ops::simd::dot(g, a + oa, n);
          else for (std::int64_t j = 0; j < n; ++j) gb[ob + j] += g[j] * a[oa];
        }
      });
      return;
    }
    // One pass per input, so neither inner loop tests which gradients are wanted.
    if (ga)
      ops::for_each_broadcast(c.y_shape, c.x_shape[0], c.x_shape[1],
                              [&](std::int64_t o, std::int64_t oa, std::int64_t ob) { ga[oa] += c.grad_y[o] * b[ob]; });
    if (gb)
      ops::for_each_broadcast(c.y_shape, c.x_shape[0], c.x_shape[1],
                              [&](std::int64_t o, std::int64_t oa, std::int64_t ob) { gb[ob] += c.grad_y[o] * a[oa]; });
  }
};
constexpr OpDef kOp = make_op<HadamardKernel>("hadamard", ops::elementwise_flops);
}  // namespace

Var hadamard(Var a, Var b) { return a.tape->apply(kOp, {a, b}, ops::broadcast_or_throw("hadamard", a, b)); }

OpEntry hadamard_entry() {
  return {"hadamard", [](Rng& rng, SampleSize s) { return binary_sample(rng, s, &hadamard); }};
}

}  // namespace matmem
