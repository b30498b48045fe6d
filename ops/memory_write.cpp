// memory_write: M'_{b,n} = M_{b,n} ⊙ (1 - w_{b,n} E_b) + w_{b,n} A_b.
//   M:[B,N,r,c] (N ≥ 2), w:[B,N], E (erase), A (add):[B,r,c] -> [B,N,r,c]
//   grad_M_n += G_n ⊙ (1 - w_n E),  grad_w_n += <G_n, A - M_n ⊙ E>_F,
//   grad_E   -= Σ_n w_n G_n ⊙ M_n,  grad_A   += Σ_n w_n G_n
// As the first contributor to grad_M (in the NTM: always, it is M_{t−1}'s last consumer) it assigns
// grad_M instead of zeroing and accumulating: one pass over the memory fewer. With the memory's batch
// innermost (ops/slots.hpp) every loop runs along a slot's r·c elements with SIMD lanes over the batch; w, E
// and A (and their gradients) are transposed to that form in scratch.
#include <array>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
template <class T>
struct MemoryWriteKernel {
  // scratch: w [N·B], E and A [r·c·B] each, transposed; backward also grad_w [N·B], grad_E and grad_A [r·c·B]
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
    const T* mem = c.x[0];
    T *wt = c.scratch, *et = wt + N * B, *at = et + E * B;
    ops::to_batch_inner(c.x[1], B, 1, N, wt);
    ops::to_batch_inner(c.x[2], B, m.rows, m.cols, et);
    ops::to_batch_inner(c.x[3], B, m.rows, m.cols, at);
    for (std::int64_t n = 0; n < N; ++n) {
      const T* slot = mem + n * E * B;
      T* yslot = c.y + n * E * B;
      ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
        using X = decltype(x);
        const X wv = ops::load<X>(wt + n * B + q);
        for (std::int64_t e = 0; e < E; ++e) {
          const X mv = ops::load<X>(slot + e * B + q);
          ops::store(yslot + e * B + q,
                     mv + wv * (ops::load<X>(at + e * B + q) - mv * ops::load<X>(et + e * B + q)));
        }
      });
    }
  }
  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
    const T* mem = c.x[0];
    T *gm = c.grad_x[0], *gw = c.grad_x[1], *ge = c.grad_x[2], *ga = c.grad_x[3];
    T *wt = c.scratch, *et = wt + N * B, *at = et + E * B;
    T *gwt = at + E * B, *get = gwt + N * B, *gat = get + E * B;
    ops::to_batch_inner(c.x[1], B, 1, N, wt);
    ops::to_batch_inner(c.x[2], B, m.rows, m.cols, et);
    ops::to_batch_inner(c.x[3], B, m.rows, m.cols, at);
    std::fill_n(get, 2 * E * B, T(0));
    // A fresh (uninitialised) grad_M is assigned in the pass below, fresh small gradients at the end.
    const bool assign_m = c.fresh(0);
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t s = n * E * B;
      ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
        using X = decltype(x);
        const X wv = ops::load<X>(wt + n * B + q);
        std::array<X, ops::kChains> acc{};
        auto element = [&](std::int64_t e, int u) {
          const std::int64_t k = e * B + q;
          const X gv = ops::load<X>(c.grad_y + s + k), mv = ops::load<X>(mem + s + k), ev = ops::load<X>(et + k);
          if (gm) {
            const X d = gv * (X(T(1)) - wv * ev);
            ops::store(gm + s + k, assign_m ? d : ops::load<X>(gm + s + k) + d);
          }
          acc[u] += gv * (ops::load<X>(at + k) - mv * ev);
          const X wg = wv * gv;
          ops::store(get + k, ops::load<X>(get + k) - wg * mv);
          ops::store(gat + k, ops::load<X>(gat + k) + wg);
        };
        std::int64_t e = 0;
        for (; e + ops::kChains <= E; e += ops::kChains)
#pragma GCC unroll 8
          for (int u = 0; u < ops::kChains; ++u) element(e + u, u);
        for (; e < E; ++e) element(e, 0);
        for (int u = 1; u < ops::kChains; ++u) acc[0] += acc[u];
        ops::store(gwt + n * B + q, acc[0]);
      });
    }
    if (gw) ops::from_batch_inner(gwt, B, 1, N, gw, !c.fresh(1));
    if (ge) ops::from_batch_inner(get, B, m.rows, m.cols, ge, !c.fresh(2));
    if (ga) ops::from_batch_inner(gat, B, m.rows, m.cols, ga, !c.fresh(3));
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double f = 4.0 * double(x[0].numel());
  return {f, 2.5 * f};
}
constexpr OpDef kOp = make_op<MemoryWriteKernel>("memory_write", flops, /*assigns_fresh=*/true);
}  // namespace

Var memory_write(Var memory, Var w, Var erase, Var add) {
  const char* op = "memory_write";
  ops::same_tape(op, memory, w);
  ops::same_tape(op, memory, erase);
  ops::same_tape(op, memory, add);
  ops::check_memory(op, memory);
  const Shape &m = memory.shape(), &ws = w.shape();
  if (!ops::is_weighting(ws) || ws.batch != m.batch || ws.cols != m.slots)
    ops::shape_error(op, "memory must be [B,N,r,c] and w [B,N] with the same B and N", memory, w);
  const Shape slot = matrices(m.batch, m.rows, m.cols);
  if (erase.shape() != slot) ops::shape_error(op, "erase must be [B,r,c] like one slot of the memory", memory, erase);
  if (add.shape() != slot) ops::shape_error(op, "add must be [B,r,c] like one slot of the memory", memory, add);
  return memory.tape->apply(kOp, {memory, w, erase, add}, m, {}, 0, 2 * m.batch * (m.slots + 2 * m.rows * m.cols));
}

OpEntry memory_write_entry() {
  return {"memory_write", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))},
                             {"w", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)},
                             {"E", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols), 0.0, 1.0)},
                             {"A", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))}};
            sample.apply = [](Tape&, std::span<const Var> x) { return memory_write(x[0], x[1], x[2], x[3]); };
            return sample;
          }};
}

}  // namespace matmem
