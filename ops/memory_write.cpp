// memory_write: M'_{b,n} = M_{b,n} ⊙ (1 - w_{b,n} E_b) + w_{b,n} A_b.
//   M:[B,N,r,c], w:[B,N], E (erase), A (add):[B,r,c] -> [B,N,r,c]
//   grad_M_n += G_n ⊙ (1 - w_n E),  grad_w_n += <G_n, A - M_n ⊙ E>_F,
//   grad_E   -= Σ_n w_n G_n ⊙ M_n,  grad_A   += Σ_n w_n G_n
// As the first contributor to grad_M (in the NTM: always, it is M_{t−1}'s last consumer) it assigns
// grad_M instead of zeroing and accumulating: one pass over the memory fewer.
#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
template <class T>
struct MemoryWriteKernel {
  // scratch: one slot's expanded weights and partial sums (2 × B·c), their per-item totals (B)
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T *mem = c.x[0], *e = c.x[2], *a = c.x[3];
    T* wn = c.scratch;
    for (std::int64_t n = 0; n < N; ++n) {
      ops::expand_slot(c.x[1], B, N, C, n, wn);
      for (std::int64_t i = 0; i < R; ++i) {
        const std::int64_t off = (n * R + i) * BC;
        const T *er = e + i * BC, *ar = a + i * BC, *mr = mem + off;
        T* yr = c.y + off;
        ops::simd_loop<T>(BC, [&](std::int64_t q, auto x) {
          using X = decltype(x);
          const X mv = ops::load<X>(mr + q);
          ops::store(yr + q, mv + ops::load<X>(wn + q) * (ops::load<X>(ar + q) - mv * ops::load<X>(er + q)));
        });
      }
    }
  }
  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols, BC = B * C;
    const T *mem = c.x[0], *e = c.x[2], *a = c.x[3];
    T *gm = c.grad_x[0], *gw = c.grad_x[1], *ge = c.grad_x[2], *ga = c.grad_x[3];
    T *wn = c.scratch, *acc = c.scratch + BC;
    // A fresh (uninitialised) grad_M is assigned in the pass below; the small ones are zeroed first.
    const bool assign_m = c.fresh(0);
    if (gw && c.fresh(1)) std::fill_n(gw, B * N, T(0));
    if (ge && c.fresh(2)) std::fill_n(ge, R * BC, T(0));
    if (ga && c.fresh(3)) std::fill_n(ga, R * BC, T(0));
    for (std::int64_t n = 0; n < N; ++n) {
      ops::expand_slot(c.x[1], B, N, C, n, wn);
      std::fill_n(acc, BC, T(0));
      for (std::int64_t i = 0; i < R; ++i) {
        const std::int64_t off = (n * R + i) * BC;
        const T *g = c.grad_y + off, *mr = mem + off, *er = e + i * BC, *ar = a + i * BC;
        ops::simd_loop<T>(BC, [&](std::int64_t q, auto x) {
          using X = decltype(x);
          const X gv = ops::load<X>(g + q), wv = ops::load<X>(wn + q), ev = ops::load<X>(er + q);
          const X mv = ops::load<X>(mr + q);
          if (gm) {
            const X d = gv * (X(T(1)) - wv * ev);
            ops::store(gm + off + q, assign_m ? d : ops::load<X>(gm + off + q) + d);
          }
          if (gw) ops::store(acc + q, ops::load<X>(acc + q) + gv * (ops::load<X>(ar + q) - mv * ev));
          if (ge) ops::store(ge + i * BC + q, ops::load<X>(ge + i * BC + q) - wv * gv * mv);
          if (ga) ops::store(ga + i * BC + q, ops::load<X>(ga + i * BC + q) + wv * gv);
        });
      }
      if (gw) ops::reduce_to_slot(acc, B, N, C, n, gw, acc + BC);
    }
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
  const Shape &m = memory.shape(), &ws = w.shape();
  if (!ops::is_weighting(ws) || ws.batch != m.batch || ws.cols != m.slots)
    ops::shape_error(op, "memory must be [B,N,r,c] and w [B,N] with the same B and N", memory, w);
  const Shape slot = matrices(m.batch, m.rows, m.cols);
  if (erase.shape() != slot) ops::shape_error(op, "erase must be [B,r,c] like one slot of the memory", memory, erase);
  if (add.shape() != slot) ops::shape_error(op, "add must be [B,r,c] like one slot of the memory", memory, add);
  return memory.tape->apply(kOp, {memory, w, erase, add}, m, {}, 0, 2 * m.batch * m.cols + m.batch);
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
