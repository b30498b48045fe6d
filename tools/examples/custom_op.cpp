// A user's own op, defined outside the library and gradient-checked with one call.
//
// swish(x) = x · sigmoid(x),  d swish/dx = s + x s (1 − s) with s = sigmoid(x).   x:[any] -> same shape
#include <cmath>
#include <cstdio>

#include <matmem/ops/ops.hpp>
#include <matmem/ops/registry.hpp>

using namespace matmem;

// 1. Forward and backward, side by side, for float and double. Backward accumulates (+=).
template <class T>
struct SwishKernel {
  static T sig(T x) { return T(1) / (T(1) + std::exp(-x)); }
  static void forward(const OpCall<T>& c) {
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.y[k] = c.x[0][k] * sig(c.x[0][k]);
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) {
      const T x = c.x[0][k], s = sig(x);
      c.grad_x[0][k] += c.grad_y[k] * (s + x * s * (T(1) - s));
    }
  }
};
constexpr OpDef kSwish = make_op<SwishKernel>("swish");

// 2. The function models call: check operands, then record the op on the tape.
Var swish(Var x) { return x.tape->apply(kSwish, {x}, x.shape()); }

int main() {
  // 3. A registry entry with sample inputs, then one call to gradcheck it.
  OpEntry entry{"swish", [](Rng& rng, SampleSize size) { return unary_sample(rng, size, &swish, -3.0, 3.0); }};
  GradcheckReport report = gradcheck_op(entry);
  std::printf("swish: %s\n", report.str().c_str());
  register_op(entry);  // now `matmem`-style tools that walk the registry include it too
  return report.passed ? 0 : 1;
}
