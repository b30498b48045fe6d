// Internal: elementwise unary ops y = f(x) from a definition with the value and the derivative:
//   struct Def { template <class T> static T f(T x); template <class T> static T df(T x, T y); };
// df gets both x and y so a derivative can reuse the output (tanh: 1 - y², sigmoid: y (1 - y)).
// Instead of f a Def may give `static void f_n(const T* x, T* y, n)`, a vectorised forward over an array
// (ops/simd.hpp), and instead of df `static void df_n(const T* x, const T* y, const T* g, T* gx, n, assign)`
// giving gx = g · f'(x) (assign) or gx += g · f'(x); the kernel uses whichever form the Def has. The ops
// are made assigns_fresh (autodiff/op.hpp): the first gradient into x is assigned, not zeroed and added.
#pragma once
#include <cstdint>

#include "matmem/autodiff/op.hpp"

namespace matmem::ops {

template <class Def>
struct Unary {
  template <class T>
  struct Kernel {
    static void forward(const OpCall<T>& c) {
      const T* x = c.x[0];
      const std::int64_t n = c.y_shape.numel();
      if constexpr (requires { Def::f_n(x, c.y, n); })
        Def::f_n(x, c.y, n);
      else
        for (std::int64_t k = 0; k < n; ++k) c.y[k] = Def::f(x[k]);
    }
    static void backward(const OpCall<T>& c) {
      T* gx = c.grad_x[0];
      if (!gx) return;
      const T* x = c.x[0];
      const std::int64_t n = c.y_shape.numel();
      const bool assign = c.fresh(0);
      if constexpr (requires { Def::df_n(x, c.y, c.grad_y, gx, n, assign); })
        Def::df_n(x, c.y, c.grad_y, gx, n, assign);
      else if (assign)
        for (std::int64_t k = 0; k < n; ++k) gx[k] = c.grad_y[k] * Def::df(x[k], c.y[k]);
      else
        for (std::int64_t k = 0; k < n; ++k) gx[k] += c.grad_y[k] * Def::df(x[k], c.y[k]);
    }
  };
};

inline Flops elementwise_flops(const Shape*, int, const Shape& y, const OpAttrs&) {
  return {double(y.numel()), 2.0 * double(y.numel())};
}

}  // namespace matmem::ops
