// memory_write: M'_{b,n} = M_{b,n} ⊙ (1 - w_{b,n} E_b) + w_{b,n} A_b.
//   M:[B,N,r,c], w:[B,N], E (erase), A (add):[B,r,c] -> [B,N,r,c]
//   grad_M_n += G_n ⊙ (1 - w_n E),  grad_w_n += <G_n, A - M_n ⊙ E>_F,
//   grad_E   -= Σ_n w_n G_n ⊙ M_n,  grad_A   += Σ_n w_n G_n
#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct Kernel {
  static void forward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols;
    const T *mem = c.x[0], *w = c.x[1], *e = c.x[2], *a = c.x[3];
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t b = 0; b < B; ++b) {
          const T wn = w[b * N + n];
          const std::int64_t off = ((n * R + i) * B + b) * C, ko = (i * B + b) * C;
          for (std::int64_t j = 0; j < C; ++j)
            c.y[off + j] = mem[off + j] * (T(1) - wn * e[ko + j]) + wn * a[ko + j];
        }
  }
  static void backward(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    const std::int64_t B = m.batch, N = m.slots, R = m.rows, C = m.cols;
    const T *mem = c.x[0], *w = c.x[1], *e = c.x[2], *a = c.x[3], *g = c.grad_y;
    T *gm = c.grad_x[0], *gw = c.grad_x[1], *ge = c.grad_x[2], *ga = c.grad_x[3];
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t b = 0; b < B; ++b) {
          const T wn = w[b * N + n];
          const std::int64_t off = ((n * R + i) * B + b) * C, ko = (i * B + b) * C;
          T dw = 0;
          for (std::int64_t j = 0; j < C; ++j) {
            const T gj = g[off + j], mj = mem[off + j];
            if (gm) gm[off + j] += gj * (T(1) - wn * e[ko + j]);
            dw += gj * (a[ko + j] - mj * e[ko + j]);
            if (ge) ge[ko + j] -= wn * gj * mj;
            if (ga) ga[ko + j] += wn * gj;
          }
          if (gw) gw[b * N + n] += dw;
        }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double f = 4.0 * double(x[0].numel());
  return {f, 2.5 * f};
}
constexpr OpDef kOp = make_op<Kernel>("memory_write", flops);
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
  return memory.tape->apply(kOp, {memory, w, erase, add}, m);
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
