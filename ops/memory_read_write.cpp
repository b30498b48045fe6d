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
// Layout as in ops/slots.hpp: SIMD lanes over the batch, the small operands transposed in scratch; at a batch
// of 1, 2, 4 or 8 (AVX-512), periodic lanes along each slot's r·c·B contiguous values
// (ops/memory_read_write.hpp).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/memory_read_write.hpp"
#include "matmem/ops/slots.hpp"

namespace matmem {
namespace {

Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs&) {
  const double mem = double(x[0].numel()), reads = double(arity - 4);
  return {(4.0 + 2.0 * reads) * mem, (10.0 + 4.0 * reads) * mem};
}
constexpr OpDef kOp =
    with_traffic(make_op<ops::MemoryReadWriteKernel>("memory_read_write", flops, /*assigns_fresh=*/true),
                 ops::memory_write_traffic);
}  // namespace

void memory_read_write(Var memory, std::span<const Var> read_weights, Var w, Var erase, Var add, std::span<Var> out) {
  const char* op = "memory_read_write";
  const std::size_t R = read_weights.size();
  if (R < 1 || R + 1 > Tape::kMaxOutputs)
    throw Error(fmt::format("{}: between 1 and {} read weightings, got {}", op, Tape::kMaxOutputs - 1, R));
  if (out.size() != R + 1)
    throw Error(fmt::format("{}: room for {} outputs (the memory and {} reads), given {}", op, R + 1, R, out.size()));
  ops::check_write(op, memory, w, erase, add);
  const Shape& m = memory.shape();
  const Shape slot = matrices(m.batch, m.rows, m.cols);
  std::array<Var, 4 + Tape::kMaxOutputs> in{memory, w, erase, add};
  std::array<Shape, Tape::kMaxOutputs> shapes;
  shapes[0] = m;
  for (std::size_t r = 0; r < R; ++r) {
    ops::check_weighting(op, memory, read_weights[r]);
    in[4 + r] = read_weights[r];
    shapes[1 + r] = slot;
  }
  memory.tape->apply(kOp, std::span<const Var>(in.data(), 4 + R), std::span<const Shape>(shapes.data(), R + 1), out,
                     {}, 0, ops::memory_read_write_scratch(std::int64_t(R), m));
}

OpEntry memory_read_write_entry() {
  return {"memory_read_write", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = memory_write_inputs(rng, d);
            sample.inputs.push_back({"w_1", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)});
            sample.inputs.push_back({"w_2", random_tensor(rng, weighting(d.batch, d.slots), 0.0, 1.0)});
            // One output that depends on all three, cheaply: memory_read(M', w_1) + R_1 + 2 R_2.
            sample.apply = [](Tape&, std::span<const Var> x) {
              std::array<Var, 3> out;
              memory_read_write(x[0], x.subspan(4, 2), x[1], x[2], x[3], out);
              return add(memory_read(out[0], x[4]), add(out[1], scale(out[2], 2.0)));
            };
            return sample;
          }};
}

}  // namespace matmem
