// circular_shift: y_{b,i} = Σ_{k=0}^{2S} s_{b,k} w_{b,(i-(k-S)) mod N}   (circular convolution over slots;
// s_{b,k} is the weight of a shift by k - S).   w:[B,N], s:[B,2S+1] -> [B,N]
//   grad_w_{b,(i-k+S) mod N} += s_{b,k} g_{b,i},   grad_s_{b,k} += Σ_i w_{b,(i-k+S) mod N} g_{b,i}
#include <algorithm>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/shift.hpp"

namespace matmem {
namespace {
template <class T>
struct CircularShiftKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, K = c.x_shape[1].cols;
    std::fill(c.y, c.y + B * N, T(0));
    for (std::int64_t b = 0; b < B; ++b) ops::shift_row(c.x[0] + b * N, c.x[1] + b * K, K, N, c.y + b * N);
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch, N = c.y_shape.cols, K = c.x_shape[1].cols;
    T *gw = c.grad_x[0], *gs = c.grad_x[1];
    for (std::int64_t b = 0; b < B; ++b)
      ops::shift_row_backward(c.x[0] + b * N, c.x[1] + b * K, c.grad_y + b * N, K, N, gw ? gw + b * N : nullptr,
                              gs ? gs + b * K : nullptr);
  }
};
Flops flops(const Shape* x, int, const Shape& y, const OpAttrs&) {
  const double f = 2.0 * double(y.numel()) * double(x[1].cols);
  return {f, 2.0 * f};
}
constexpr OpDef kOp = make_op<CircularShiftKernel>("circular_shift", flops);
}  // namespace

Var circular_shift(Var w, Var s) {
  ops::same_tape("circular_shift", w, s);
  const Shape &ws = w.shape(), &ss = s.shape();
  if (!ops::is_weighting(ws) || !ops::is_weighting(ss) || ws.batch != ss.batch)
    ops::shape_error("circular_shift", "w must be [B,N] and s [B,2S+1] with the same B", w, s);
  if (ss.cols % 2 == 0) ops::shape_error("circular_shift", "s must have an odd length 2S+1", w, s);
  return w.tape->apply(kOp, {w, s}, ws);
}

OpEntry circular_shift_entry() {
  return {"circular_shift", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"w", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)},
                             {"s", random_tensor(rng, weighting(d.batch, 3), 0.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> x) { return circular_shift(x[0], x[1]); };
            return sample;
          }};
}

}  // namespace matmem
