// tanh: y = tanh x, dy/dx = 1 - y².  x:[any] -> same shape
#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
struct TanhDef {
  template <class T>
  static void f_n(const T* x, T* y, std::int64_t n) { ops::simd::tanh(x, y, n); }
  template <class T>
  static T df(T, T y) { return T(1) - y * y; }
};
template <class T>
using TanhKernel = ops::Unary<TanhDef>::Kernel<T>;
constexpr OpDef kOp = make_op<TanhKernel>("tanh", ops::elementwise_flops, /*assigns_fresh=*/true);
}  // namespace

Var tanh(Var x) { return x.tape->apply(kOp, {x}, x.shape()); }

OpEntry tanh_entry() {
  return {"tanh", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &tanh, -3.0, 3.0); }};
}

}  // namespace matmem
