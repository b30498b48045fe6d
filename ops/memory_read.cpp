// memory_read: R_b = Σ_n w_{b,n} M_{b,n}.   M:[B,N,r,c], w:[B,N] -> [B,r,c]
//   grad_M_{b,n} += w_{b,n} G_b,   grad_w_{b,n} += <G_b, M_{b,n}>_F
#include <algorithm>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
template <class T>
struct MemoryReadKernel {
  // scratch: one slot's expanded weights and partial sums (2 × B·c), their per-item totals (B)
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T* mem = c.x[0];
    T* wn = c.scratch;
    std::fill(c.y, c.y + c.y_shape.numel(), T(0));
    for (std::int64_t n = 0; n < N; ++n) {
      ops::expand_slot(c.x[1], B, N, C, n, wn);
      for (std::int64_t i = 0; i < R; ++i) {
        const T* mr = mem + (n * R + i) * BC;
        T* yr = c.y + i * BC;
        ops::simd_loop<T>(BC, [&](std::int64_t q, auto x) {
          using X = decltype(x);
          ops::store(yr + q, ops::load<X>(yr + q) + ops::load<X>(wn + q) * ops::load<X>(mr + q));
        });
      }
    }
  }
  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T* mem = c.x[0];
    T *gm = c.grad_x[0], *gw = c.grad_x[1];
    T *wn = c.scratch, *acc = c.scratch + BC;
    for (std::int64_t n = 0; n < N; ++n) {
      ops::expand_slot(c.x[1], B, N, C, n, wn);
      std::fill_n(acc, BC, T(0));
      for (std::int64_t i = 0; i < R; ++i) {
        const T* gr = c.grad_y + i * BC;
        const std::int64_t off = (n * R + i) * BC;
        ops::simd_loop<T>(BC, [&](std::int64_t q, auto x) {
          using X = decltype(x);
          const X g = ops::load<X>(gr + q);
          if (gm) ops::store(gm + off + q, ops::load<X>(gm + off + q) + ops::load<X>(wn + q) * g);
          if (gw) ops::store(acc + q, ops::load<X>(acc + q) + g * ops::load<X>(mem + off + q));
        });
      }
      if (gw) ops::reduce_to_slot(acc, B, N, C, n, gw, acc + BC);
    }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double f = 2.0 * double(x[0].numel());
  return {f, 2.0 * f};
}
constexpr OpDef kOp = make_op<MemoryReadKernel>("memory_read", flops);
}  // namespace

Var memory_read(Var memory, Var w) {
  ops::same_tape("memory_read", memory, w);
  const Shape &m = memory.shape(), &ws = w.shape();
  if (!ops::is_weighting(ws) || ws.batch != m.batch || ws.cols != m.slots)
    ops::shape_error("memory_read", "memory must be [B,N,r,c] and w [B,N] with the same B and N", memory, w);
  return memory.tape->apply(kOp, {memory, w}, matrices(m.batch, m.rows, m.cols), {}, 0, 2 * m.batch * m.cols + m.batch);
}

OpEntry memory_read_entry() {
  return {"memory_read", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))},
                             {"w", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> x) { return memory_read(x[0], x[1]); };
            return sample;
          }};
}

}  // namespace matmem
