// softplus: y = log(1 + e^x), dy/dx = sigmoid(x).  x:[any] -> same shape
#include <algorithm>
#include <cmath>

#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/simd.hpp"
#include "ops/unary.hpp"

namespace matmem {
namespace {
struct SoftplusDef {
  template <class T>
  static void f_n(const T* x, T* y, std::int64_t n) { ops::simd::softplus(x, y, n); }
  template <class T>
  static void df_n(const T* x, const T*, const T* g, T* gx, std::int64_t n) {
    ops::simd::sigmoid_chunks(x, n, [&](std::int64_t k, const T* s, std::int64_t m) {
      for (std::int64_t q = 0; q < m; ++q) gx[k + q] += g[k + q] * s[q];
    });
  }
  // max(x,0) + log1p(e^-|x|): exact for all x, never overflows (log(1+e^x) overflows past x ≈ 88 in float).
  template <class T>
  static T f(T x) { return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x))); }
  template <class T>
  static T df(T x, T) {
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
};
template <class T>
using SoftplusKernel = ops::Unary<SoftplusDef>::Kernel<T>;
constexpr OpDef kOp = make_op<SoftplusKernel>("softplus", ops::elementwise_flops);
}  // namespace

Var softplus(Var x) { return x.tape->apply(kOp, {x}, x.shape()); }

OpEntry softplus_entry() {
  return {"softplus", [](Rng& rng, SampleSize s) { return unary_sample(rng, s, &softplus, -6.0, 6.0); }};
}

}  // namespace matmem
