// add: y = a + b, broadcasting (ops/elementwise.hpp).  grad_a += Σ_broadcast g, grad_b += Σ_broadcast g.
#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
template <class T>
struct AddKernel {
  static void forward(const OpCall<T>& c) {
    const T *a = c.x[0], *b = c.x[1];
    ops::for_each_broadcast(c.y_shape, c.x_shape[0], c.x_shape[1],
                            [&](std::int64_t o, std::int64_t oa, std::int64_t ob) { c.y[o] = a[oa] + b[ob]; });
  }
  static void backward(const OpCall<T>& c) {
    T *ga = c.grad_x[0], *gb = c.grad_x[1];
    // One pass per input, so neither inner loop tests which gradients are wanted.
    if (ga)
      ops::for_each_broadcast(c.y_shape, c.x_shape[0], c.x_shape[1],
                              [&](std::int64_t o, std::int64_t oa, std::int64_t ob) { ga[oa] += c.grad_y[o]; });
    if (gb)
      ops::for_each_broadcast(c.y_shape, c.x_shape[0], c.x_shape[1],
                              [&](std::int64_t o, std::int64_t oa, std::int64_t ob) { gb[ob] += c.grad_y[o]; });
  }
};
constexpr OpDef kOp = make_op<AddKernel>("add", ops::elementwise_flops);
}  // namespace

Var add(Var a, Var b) { return a.tape->apply(kOp, {a, b}, ops::broadcast_or_throw("add", a, b)); }

OpEntry add_entry() { return {"add", [](Rng& rng, SampleSize s) { return binary_sample(rng, s, &add); }}; }

}  // namespace matmem
