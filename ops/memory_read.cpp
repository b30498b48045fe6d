// memory_read: R_b = Σ_n w_{b,n} M_{b,n}.   M:[B,N,r,c] (N ≥ 2), w:[B,N] -> [B,r,c]
//   grad_M_{b,n} += w_{b,n} G_b,   grad_w_{b,n} += <G_b, M_{b,n}>_F
// With the memory's batch innermost (ops/slots.hpp) both passes run along a slot's r·c elements with SIMD
// lanes over the batch; R and G are transposed to that form in scratch.
#include <algorithm>
#include <array>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/slots.hpp"

namespace matmem {
namespace {
template <class T>
struct MemoryReadKernel {
  // scratch: w transposed [N·B], R (forward) or G (backward) transposed [r·c·B], grad_w transposed [N·B]
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
    const T* mem = c.x[0];
    T *wt = c.scratch, *rt = wt + N * B;
    ops::to_batch_inner(c.x[1], B, 1, N, wt);
    std::fill_n(rt, E * B, T(0));
    for (std::int64_t n = 0; n < N; ++n) {
      const T* slot = mem + n * E * B;
      ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
        using X = decltype(x);
        const X wv = ops::load<X>(wt + n * B + q);
        for (std::int64_t e = 0; e < E; ++e)
          ops::store<X>(rt + e * B + q, ops::load<X>(rt + e * B + q) + wv * ops::load<X>(slot + e * B + q));
      });
    }
    ops::from_batch_inner(rt, B, m.rows, m.cols, c.y, /*accumulate=*/false);
  }
  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
    const T* mem = c.x[0];
    T *gm = c.grad_x[0], *gw = c.grad_x[1];
    T *wt = c.scratch, *gt = wt + N * B, *gwt = gt + E * B;
    ops::to_batch_inner(c.x[1], B, 1, N, wt);
    ops::to_batch_inner(c.grad_y, B, m.rows, m.cols, gt);
    for (std::int64_t n = 0; n < N; ++n) {
      const T* slot = mem + n * E * B;
      T* gslot = gm ? gm + n * E * B : nullptr;
      ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
        using X = decltype(x);
        const X wv = ops::load<X>(wt + n * B + q);
        std::array<X, ops::kChains> acc{};
        auto element = [&](std::int64_t e, int u) {
          const X g = ops::load<X>(gt + e * B + q);
          if (gslot) ops::store<X>(gslot + e * B + q, ops::load<X>(gslot + e * B + q) + wv * g);
          acc[u] += g * ops::load<X>(slot + e * B + q);
        };
        ops::for_each_chained(E, element);
        for (int u = 1; u < ops::kChains; ++u) acc[0] += acc[u];
        ops::store<X>(gwt + n * B + q, acc[0]);
      });
    }
    if (gw) ops::from_batch_inner(gwt, B, 1, N, gw, /*accumulate=*/true);
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double f = 2.0 * double(x[0].numel());
  return {f, 2.0 * f};
}
// At least: forward reads M; backward reads M and reads and writes grad_M.
Traffic traffic(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double m = double(x[0].numel());
  return {m, 3.0 * m};
}
constexpr OpDef kOp = with_traffic(make_op<MemoryReadKernel>("memory_read", flops), traffic);
}  // namespace

Var memory_read(Var memory, Var w) {
  ops::check_memory("memory_read", memory);
  ops::check_weighting("memory_read", memory, w);
  const Shape& m = memory.shape();
  return memory.tape->apply(kOp, {memory, w}, matrices(m.batch, m.rows, m.cols), {}, 0,
                            m.batch * (2 * m.slots + m.rows * m.cols));
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
