// sigmoid: y = 1 / (1 + e^-x), dy/dx = y (1 - y).  x:[any] -> same shape
#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
struct SigmoidDef {
  template <class T>
  static void f_n(const T* x, T* y, std::int64_t n) { ops::simd::sigmoid(x, y, n); }
  template <class T>
  static T df(T, T y) { return y * (T(1) - y); }
};
template <class T>
using SigmoidKernel = ops::Unary<SigmoidDef>::Kernel<T>;
constexpr OpDef kOp = make_op<SigmoidKernel>("sigmoid", ops::elementwise_flops, /*assigns_fresh=*/true);
}  // namespace

Var sigmoid(Var x) { return x.tape->apply(kOp, {x}, x.shape()); }

OpEntry sigmoid_entry() {
  return {"sigmoid", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &sigmoid, -8.0, 8.0); }};
}

}  // namespace matmem
