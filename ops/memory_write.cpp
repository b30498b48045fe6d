// memory_write: M'_{b,n} = M_{b,n} ⊙ (1 - w_{b,n} E_b) + w_{b,n} A_b.
//   M:[B,N,r,c], w:[B,N], E (erase), A (add):[B,r,c] -> [B,N,r,c]
//   grad_M_n += G_n ⊙ (1 - w_n E),  grad_w_n += <G_n, A - M_n ⊙ E>_F,
//   grad_E   -= Σ_n w_n G_n ⊙ M_n,  grad_A   += Σ_n w_n G_n
#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {
template <class T>
struct MemoryWriteKernel {
  // saved: ew (N × B·c) then one slot's partial sums (B·c)
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, BC = B * m.cols;
    const T *mem = c.x[0], *e = c.x[2], *a = c.x[3];
    T* ew = c.saved;
    ops::expand_per_slot(c.x[1], B, N, m.cols, ew);
    for (std::int64_t n = 0; n < N; ++n) {
      const T* wn = ew + n * BC;
      for (std::int64_t i = 0; i < R; ++i) {
        const std::int64_t off = (n * R + i) * BC;
        const T *er = e + i * BC, *ar = a + i * BC, *mr = mem + off;
        T* yr = c.y + off;
#pragma GCC ivdep
        for (std::int64_t q = 0; q < BC; ++q) yr[q] = mr[q] * (T(1) - wn[q] * er[q]) + wn[q] * ar[q];
      }
    }
  }
  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, BC = B * m.cols;
    const T *mem = c.x[0], *e = c.x[2], *a = c.x[3];
    T *gm = c.grad_x[0], *gw = c.grad_x[1], *ge = c.grad_x[2], *ga = c.grad_x[3];
    const T* ew = c.saved;
    T* acc = c.saved + N * BC;
    for (std::int64_t n = 0; n < N; ++n) {
      const T* wn = ew + n * BC;
      if (gw) std::fill(acc, acc + BC, T(0));
      for (std::int64_t i = 0; i < R; ++i) {
        const std::int64_t off = (n * R + i) * BC;
        const T *g = c.grad_y + off, *mr = mem + off, *er = e + i * BC, *ar = a + i * BC;
        if (gm) {
          T* gr = gm + off;
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) gr[q] += g[q] * (T(1) - wn[q] * er[q]);
        }
        if (gw)
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) acc[q] += g[q] * (ar[q] - mr[q] * er[q]);
        if (ge) {
          T* gr = ge + i * BC;
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) gr[q] -= wn[q] * g[q] * mr[q];
        }
        if (ga) {
          T* gr = ga + i * BC;
#pragma GCC ivdep
          for (std::int64_t q = 0; q < BC; ++q) gr[q] += wn[q] * g[q];
        }
      }
      if (gw) ops::reduce_to_slot(acc, B, N, m.cols, n, gw);
    }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double f = 4.0 * double(x[0].numel());
  return {f, 2.5 * f};
}
constexpr OpDef kOp = make_op<MemoryWriteKernel>("memory_write", flops);
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
  return memory.tape->apply(kOp, {memory, w, erase, add}, m, {}, (m.slots + 1) * m.batch * m.cols);
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
