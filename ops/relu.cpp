// relu: y = max(x, 0), dy/dx = [x > 0].  x:[any] -> same shape
#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
struct ReluDef {
  template <class T>
  static T f(T x) { return x < 0 ? T(0) : x; }  // a NaN passes on, to be caught as non-finite
  template <class T>
  static T df(T x, T) { return x > 0 ? T(1) : T(0); }
};
template <class T>
using ReluKernel = ops::Unary<ReluDef>::Kernel<T>;
constexpr OpDef kOp = make_op<ReluKernel>("relu", ops::elementwise_flops, /*assigns_fresh=*/true);
}  // namespace

Var relu(Var x) { return x.tape->apply(kOp, {x}, x.shape()); }

OpEntry relu_entry() {
  return {"relu", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &relu, -3.0, 3.0); }};
}

}  // namespace matmem
