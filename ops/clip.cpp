// clip: y = min(max(x, −c), c) for a constant c > 0 (attrs f[0]); dy/dx = [−c ≤ x ≤ c] (PyTorch's clamp: the
// gradient passes at the edges and is zero outside).  x:[any] -> same shape
// Bounds a controller's state and outputs in the forward pass (models/layers/cells.hpp, `controller.clip`).
//
// clip_gradient: y = x; backward passes min(max(ȳ, −c), c), the upstream gradient clipped element by element
// (not the derivative of y: deliberately, where |ȳ| > c).  x:[any] -> same shape
// Graves (2013, "Generating sequences with recurrent neural networks", §2) clips the derivatives inside
// backpropagation through time so; matmem puts it on every recurrent state between two time steps (config key
// clip.state_gradient, Step::end_step), which bounds what one time step hands back to the one before it.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/unary.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
template <class T>
struct ClipKernel {
  static void forward(const OpCall<T>& c) {
    const T hi = T(c.attrs.f[0]), lo = -hi;
    const T* x = c.x[0];
    for (std::int64_t k = 0, n = c.y_shape.numel(); k < n; ++k)  // a NaN passes on, to be caught as non-finite
      c.y[k] = x[k] < lo ? lo : (x[k] > hi ? hi : x[k]);
  }
  static void backward(const OpCall<T>& c) {
    T* gx = c.grad_x[0];
    if (!gx) return;
    const T hi = T(c.attrs.f[0]), lo = -hi;
    const T* x = c.x[0];
    for (std::int64_t k = 0, n = c.y_shape.numel(); k < n; ++k)
      if (x[k] >= lo && x[k] <= hi) gx[k] += c.grad_y[k];
  }
};
constexpr OpDef kOp = make_op<ClipKernel>("clip", ops::elementwise_flops);

template <class T>
struct ClipGradientKernel {
  static void forward(const OpCall<T>& c) { std::copy(c.x[0], c.x[0] + c.y_shape.numel(), c.y); }
  static void backward(const OpCall<T>& c) {
    T* gx = c.grad_x[0];
    if (!gx) return;
    const T hi = T(c.attrs.f[0]), lo = -hi;
    for (std::int64_t k = 0, n = c.y_shape.numel(); k < n; ++k) {
      const T g = c.grad_y[k];  // a NaN passes on, to be caught as non-finite
      gx[k] += g < lo ? lo : (g > hi ? hi : g);
    }
  }
};
constexpr OpDef kGradientOp = make_op<ClipGradientKernel>("clip_gradient", ops::elementwise_flops);
}  // namespace

Var clip(Var x, double c) {
  if (!(c > 0) || !std::isfinite(c)) throw Error(fmt::format("clip: the bound must be finite and > 0, not {}", c));
  OpAttrs attrs;
  attrs.f[0] = c;
  return x.tape->apply(kOp, {x}, x.shape(), attrs);
}

Var clip_gradient(Var x, double c) {
  if (!(c > 0) || !std::isfinite(c))
    throw Error(fmt::format("clip_gradient: the bound must be finite and > 0, not {}", c));
  OpAttrs attrs;
  attrs.f[0] = c;
  return x.tape->apply(kGradientOp, {x}, x.shape(), attrs);
}

OpEntry clip_gradient_entry() {
  // A bound far above any upstream gradient gradcheck draws: the identity, whose derivative it checks (the
  // clipped case is tested by value, tests/ops/clip_test.cpp).
  return {"clip_gradient", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"x", random_tensor(rng, matrices(d.batch, d.rows, d.cols))}};
            sample.apply = [](Tape&, std::span<const Var> v) { return clip_gradient(v[0], 1e6); };
            return sample;
          }};
}

OpEntry clip_entry() {
  // Values in [−3, 3] clipped at ±1.5: about half of them outside, none within 0.05 of an edge, where central
  // differences would straddle the kink.
  return {"clip", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            Tensor x = random_tensor(rng, matrices(d.batch, d.rows, d.cols), -3.0, 3.0);
            for (std::int64_t k = 0; k < x.numel(); ++k) {
              const double v = x.get(k), edge = v < 0 ? -1.5 : 1.5;
              if (std::abs(v - edge) < 0.05) x.set(k, edge + (std::abs(v) < 1.5 ? -0.05 : 0.05) * (v < 0 ? -1 : 1));
            }
            OpSample sample;
            sample.inputs = {{"x", std::move(x)}};
            sample.apply = [](Tape&, std::span<const Var> v) { return clip(v[0], 1.5); };
            return sample;
          }};
}

}  // namespace matmem
