// softplus: y = log(1 + e^x), dy/dx = sigmoid(x).  x:[any] -> same shape
#include <algorithm>
#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/simd.hpp"
#include "matmem/ops/unary.hpp"

namespace matmem {
namespace {
struct SoftplusDef {
  template <class T>
  static void f_n(const T* x, T* y, std::int64_t n) { ops::simd::softplus(x, y, n); }
  template <class T>
  static void df_n(const T* x, const T*, const T* g, T* gx, std::int64_t n, bool assign) {
    ops::simd::sigmoid_chunks(x, n, [&](std::int64_t k, const T* s, std::int64_t m) {
      if (assign)
        for (std::int64_t q = 0; q < m; ++q) gx[k + q] = g[k + q] * s[q];
      else
        for (std::int64_t q = 0; q < m; ++q) gx[k + q] += g[k + q] * s[q];
    });
  }
};
template <class T>
using SoftplusKernel = ops::Unary<SoftplusDef>::Kernel<T>;
constexpr OpDef kOp = make_op<SoftplusKernel>("softplus", ops::elementwise_flops, /*assigns_fresh=*/true);
}  // namespace

Var softplus(Var x) { return x.tape->apply(kOp, {x}, x.shape()); }

OpEntry softplus_entry() {
  return {"softplus", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &softplus, -6.0, 6.0); }};
}

}  // namespace matmem
