// memory_read_write: an NTM time step's reads and first write of the memory in one pass over it.
//   M:[B,N,r,c] (N ≥ 2), w:[B,N], E (erase), A (add):[B,r,c], read weightings w_1..w_R:[B,N]
//   -> M' = memory_write(M, w, E, A) [B,N,r,c], and R_k = memory_read(M, w_k) [B,r,c] for k = 1..R
//   (the reads see M before the write, as the NTM's read heads do).
//   M'_n = M_n ⊙ (1 - w_n E) + w_n A,   R_k = Σ_n w_{k,n} M_n
// With G the gradient of M' and G_k those of the reads:
//   grad_M_n   = G_n ⊙ (1 - w_n E) + Σ_k w_{k,n} G_k   (assigned when fresh: in the NTM M_{t−1} has no
//                                                      other consumer whose backward runs earlier)
//   grad_w_n  += <G_n, A - M_n ⊙ E>_F,   grad_E -= Σ_n w_n G_n ⊙ M_n,   grad_A += Σ_n w_n G_n
//   grad_w_k,n += <G_k, M_n>_F
// Forward, the separate ops read M twice and write M'; this reads M once and writes M'. Backward, they read G
// once, M twice and grad_M once and write grad_M twice; this reads G and M once and writes grad_M once.
// A test checks it against memory_write and memory_read in values and every gradient.
// Layout as in ops/slots.hpp: SIMD lanes over the batch, the small operands transposed in scratch.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "ops/check.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"
#include "ops/slots.hpp"

namespace matmem {
namespace {

// scratch: w [N·B], E, A [r·c·B], the read weightings [R·N·B], the reads (forward) or their gradients
// (backward) [R·r·c·B], all transposed; backward also grad_w [N·B], grad_E, grad_A [r·c·B], grad_w_k [R·N·B].
std::int64_t scratch_size(std::int64_t R, const Shape& m) {
  const std::int64_t B = m.batch, N = m.slots, E = m.rows * m.cols;
  return 2 * (N * B + 2 * E * B + R * N * B) + R * E * B;
}

template <class T>
struct MemoryReadWriteKernel {
  // Pointers into scratch, and the small operands transposed.
  struct Work {
    std::int64_t B, N, E, R;
    T *wt, *et, *at, *rwt, *rt, *gwt, *get, *gat, *grwt;
  };
  static Work prepare(const OpCall<T>& c) {
    const Shape& m = c.x_shape[0];
    Work k{m.batch, m.slots, m.rows * m.cols, c.arity - 4};
    const std::int64_t B = k.B, N = k.N, E = k.E, R = k.R;
    k.wt = c.scratch, k.et = k.wt + N * B, k.at = k.et + E * B, k.rwt = k.at + E * B, k.rt = k.rwt + R * N * B;
    k.gwt = k.rt + R * E * B, k.get = k.gwt + N * B, k.gat = k.get + E * B, k.grwt = k.gat + E * B;
    ops::to_batch_inner(c.x[1], B, 1, N, k.wt);
    ops::to_batch_inner(c.x[2], B, m.rows, m.cols, k.et);
    ops::to_batch_inner(c.x[3], B, m.rows, m.cols, k.at);
    for (std::int64_t r = 0; r < R; ++r) ops::to_batch_inner(c.x[4 + r], B, 1, N, k.rwt + r * N * B);
    return k;
  }

  // The passes over the slots, for RK = R reads fixed at compile time (RK = 0: R at run time), so the
  // read weights stay in registers. Forward takes the slots' elements in blocks of kBlock, each block's
  // reads summed over all slots in registers: the store stream of M' is then the only one.
  static constexpr std::int64_t kBlock = 12;
  template <int RK>
  static void forward_slots(const OpCall<T>& c, const Work& k) {
    const std::int64_t B = k.B, N = k.N, E = k.E, R = RK == 0 ? k.R : RK;
    const T *mem = c.x[0], *wt = k.wt, *et = k.et, *at = k.at, *rwt = k.rwt;
    T *y = c.y, *rt = k.rt;
    ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
      using X = decltype(x);
      for (std::int64_t e0 = 0; e0 < E; e0 += kBlock) {
        if (RK > 0 && e0 + kBlock <= E) {  // a full block: RK·kBlock sums in registers
          std::array<std::array<X, kBlock>, RK == 0 ? 1 : RK> acc{};
          for (std::int64_t n = 0; n < N; ++n) {
            const X wv = ops::load<X>(wt + n * B + q);
            const T* slot = mem + (n * E + e0) * B + q;
            T* yslot = y + (n * E + e0) * B + q;
#pragma GCC unroll 16
            for (std::int64_t e = 0; e < kBlock; ++e) {
              const X mv = ops::load<X>(slot + e * B);
              const std::int64_t i = (e0 + e) * B + q;
              ops::store(yslot + e * B, mv + wv * (ops::load<X>(at + i) - mv * ops::load<X>(et + i)));
#pragma GCC unroll 4
              for (int r = 0; r < RK; ++r) acc[r][e] += ops::load<X>(rwt + (r * N + n) * B + q) * mv;
            }
          }
          for (int r = 0; r < RK; ++r)
            for (std::int64_t e = 0; e < kBlock; ++e) ops::store(rt + r * E * B + (e0 + e) * B + q, acc[r][e]);
        } else {  // a last partial block, or R at run time: sums in rt
          const std::int64_t e1 = std::min(E, e0 + kBlock);
          for (std::int64_t n = 0; n < N; ++n) {
            const X wv = ops::load<X>(wt + n * B + q);
            for (std::int64_t e = e0; e < e1; ++e) {
              const std::int64_t i = e * B + q;
              const X mv = ops::load<X>(mem + n * E * B + i);
              ops::store(y + n * E * B + i, mv + wv * (ops::load<X>(at + i) - mv * ops::load<X>(et + i)));
              for (std::int64_t r = 0; r < R; ++r)
                ops::store(rt + r * E * B + i,
                           ops::load<X>(rt + r * E * B + i) + ops::load<X>(rwt + (r * N + n) * B + q) * mv);
            }
          }
        }
      }
    });
  }
  template <int RK>
  static void backward_slots(const OpCall<T>& c, const Work& k) {
    const std::int64_t B = k.B, N = k.N, E = k.E, R = RK == 0 ? k.R : RK;
    const T *mem = c.x[0], *g = c.grad_y, *wt = k.wt, *et = k.et, *at = k.at, *rwt = k.rwt, *grt = k.rt;
    T *gm = c.grad_x[0], *get = k.get, *gat = k.gat, *gwt = k.gwt, *grwt = k.grwt;
    const bool assign_m = c.fresh(0);
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t s = n * E * B;
      ops::simd_loop<T>(B, [&](std::int64_t q, auto x) {
        using X = decltype(x);
        const X wv = ops::load<X>(wt + n * B + q);
        // Independent sums (ops::kChains) each for grad_w and the read weights' gradients.
        std::array<X, ops::kChains> acc{};
        std::array<std::array<X, RK == 0 ? Tape::kMaxOutputs : RK>, ops::kChains> racc{};
        std::array<X, RK == 0 ? Tape::kMaxOutputs : RK> rw{};
        for (std::int64_t r = 0; r < R; ++r) rw[r] = ops::load<X>(rwt + (r * N + n) * B + q);
        auto element = [&](std::int64_t e, int u) {
          const std::int64_t i = e * B + q;
          const X gv = ops::load<X>(g + s + i), mv = ops::load<X>(mem + s + i), ev = ops::load<X>(et + i);
          X d = gv * (X(T(1)) - wv * ev);
          for (std::int64_t r = 0; r < R; ++r) {
            const X gr = ops::load<X>(grt + r * E * B + i);
            d += rw[r] * gr;
            racc[u][r] += gr * mv;
          }
          if (gm) ops::store(gm + s + i, assign_m ? d : ops::load<X>(gm + s + i) + d);
          acc[u] += gv * (ops::load<X>(at + i) - mv * ev);
          const X wg = wv * gv;
          ops::store(get + i, ops::load<X>(get + i) - wg * mv);
          ops::store(gat + i, ops::load<X>(gat + i) + wg);
        };
        std::int64_t e = 0;
        for (; e + ops::kChains <= E; e += ops::kChains)
#pragma GCC unroll 8
          for (int u = 0; u < ops::kChains; ++u) element(e + u, u);
        for (; e < E; ++e) element(e, 0);
        for (int u = 1; u < ops::kChains; ++u) {
          acc[0] += acc[u];
          for (std::int64_t r = 0; r < R; ++r) racc[0][r] += racc[u][r];
        }
        ops::store(gwt + n * B + q, acc[0]);
        for (std::int64_t r = 0; r < R; ++r) ops::store(grwt + (r * N + n) * B + q, racc[0][r]);
      });
    }
  }

  static void forward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const Shape& m = c.x_shape[0];
    std::fill_n(k.rt, k.R * k.E * k.B, T(0));
    switch (k.R) {
      case 1: forward_slots<1>(c, k); break;
      case 2: forward_slots<2>(c, k); break;
      default: forward_slots<0>(c, k);
    }
    for (std::int64_t r = 0; r < k.R; ++r)
      ops::from_batch_inner(k.rt + r * k.E * k.B, k.B, m.rows, m.cols, c.ys[1 + r], /*accumulate=*/false);
  }

  static void backward(const OpCall<T>& c) {
    const Work k = prepare(c);
    const std::int64_t B = k.B, N = k.N, E = k.E, R = k.R;
    const Shape& m = c.x_shape[0];
    for (std::int64_t r = 0; r < R; ++r) ops::to_batch_inner(c.grad_ys[1 + r], B, m.rows, m.cols, k.rt + r * E * B);
    std::fill_n(k.get, 2 * E * B, T(0));
    switch (R) {
      case 1: backward_slots<1>(c, k); break;
      case 2: backward_slots<2>(c, k); break;
      default: backward_slots<0>(c, k);
    }
    if (T* g = c.grad_x[1]) ops::from_batch_inner(k.gwt, B, 1, N, g, !c.fresh(1));
    if (T* g = c.grad_x[2]) ops::from_batch_inner(k.get, B, m.rows, m.cols, g, !c.fresh(2));
    if (T* g = c.grad_x[3]) ops::from_batch_inner(k.gat, B, m.rows, m.cols, g, !c.fresh(3));
    for (std::int64_t r = 0; r < R; ++r)
      if (T* g = c.grad_x[4 + r]) ops::from_batch_inner(k.grwt + r * N * B, B, 1, N, g, !c.fresh(4 + int(r)));
  }
};

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs&) {
  const double mem = double(x[0].numel()), reads = double(arity - 4);
  return {(4.0 + 2.0 * reads) * mem, (10.0 + 4.0 * reads) * mem};
}
constexpr OpDef kOp = make_op<MemoryReadWriteKernel>("memory_read_write", flops, /*assigns_fresh=*/true);
}  // namespace

void memory_read_write(Var memory, std::span<const Var> read_weights, Var w, Var erase, Var add, std::span<Var> out) {
  const char* op = "memory_read_write";
  const std::size_t R = read_weights.size();
  if (R < 1 || R + 1 > Tape::kMaxOutputs)
    throw Error(fmt::format("{}: between 1 and {} read weightings, got {}", op, Tape::kMaxOutputs - 1, R));
  if (out.size() != R + 1)
    throw Error(fmt::format("{}: room for {} outputs (the memory and {} reads), given {}", op, R + 1, R, out.size()));
  ops::same_tape(op, memory, w);
  ops::same_tape(op, memory, erase);
  ops::same_tape(op, memory, add);
  ops::check_memory(op, memory);
  const Shape& m = memory.shape();
  auto check_weighting = [&](Var v) {
    ops::same_tape(op, memory, v);
    const Shape& ws = v.shape();
    if (!ops::is_weighting(ws) || ws.batch != m.batch || ws.cols != m.slots)
      ops::shape_error(op, "memory must be [B,N,r,c] and every weighting [B,N] with the same B and N", memory, v);
  };
  check_weighting(w);
  const Shape slot = matrices(m.batch, m.rows, m.cols);
  if (erase.shape() != slot) ops::shape_error(op, "erase must be [B,r,c] like one slot of the memory", memory, erase);
  if (add.shape() != slot) ops::shape_error(op, "add must be [B,r,c] like one slot of the memory", memory, add);
  std::array<Var, 4 + Tape::kMaxOutputs> in{memory, w, erase, add};
  std::array<Shape, Tape::kMaxOutputs> shapes;
  shapes[0] = m;
  for (std::size_t r = 0; r < R; ++r) {
    check_weighting(read_weights[r]);
    in[4 + r] = read_weights[r];
    shapes[1 + r] = slot;
  }
  memory.tape->apply(kOp, std::span<const Var>(in.data(), 4 + R), std::span<const Shape>(shapes.data(), R + 1), out,
                     {}, 0, scratch_size(std::int64_t(R), m));
}

OpEntry memory_read_write_entry() {
  return {"memory_read_write", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))},
                             {"w", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)},
                             {"E", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols), 0.0, 1.0)},
                             {"A", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))},
                             {"w_1", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)},
                             {"w_2", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)}};
            // One output that depends on all three: M' ⊙ (R_1 + 2 R_2), the reads broadcast over the slots.
            sample.apply = [](Tape&, std::span<const Var> x) {
              std::array<Var, 3> out;
              memory_read_write(x[0], x.subspan(4, 2), x[1], x[2], x[3], out);
              return hadamard(out[0], add(out[1], scale(out[2], 2.0)));
            };
            return sample;
          }};
}

}  // namespace matmem
