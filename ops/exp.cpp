// exp: y = e^x, dy/dx = y.  x:[any] -> same shape
#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
struct ExpDef {
  template <class T>
  static void f_n(const T* x, T* y, std::int64_t n) { ops::simd::exp(x, y, n); }
  template <class T>
  static T df(T, T y) { return y; }
};
template <class T>
using ExpKernel = ops::Unary<ExpDef>::Kernel<T>;
constexpr OpDef kOp = make_op<ExpKernel>("exp", ops::elementwise_flops, /*assigns_fresh=*/true);
}  // namespace

Var exp(Var x) { return x.tape->apply(kOp, {x}, x.shape()); }

OpEntry exp_entry() {
  return {"exp", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &exp, -2.0, 2.0); }};
}

}  // namespace matmem
