// memory_write: M'_{b,n} = M_{b,n} ⊙ (1 - w_{b,n} E_b) + w_{b,n} A_b.
//   M:[B,N,r,c] (N ≥ 2), w:[B,N], E (erase), A (add):[B,r,c] -> [B,N,r,c]
//   grad_M_n += G_n ⊙ (1 - w_n E),  grad_w_n += <G_n, A - M_n ⊙ E>_F,
//   grad_E   -= Σ_n w_n G_n ⊙ M_n,  grad_A   += Σ_n w_n G_n
// As the first contributor to grad_M (in the NTM: always, it is M_{t−1}'s last consumer) it assigns
// grad_M instead of zeroing and accumulating: one pass over the memory fewer. The kernel is memory_read_write's
// with no reads (ops/memory_read_write.hpp).
#include <array>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/memory_read_write.hpp"
#include "matmem/ops/slots.hpp"

namespace matmem {
namespace {
Flops flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double f = 4.0 * double(x[0].numel());
  return {f, 2.5 * f};
}
constexpr OpDef kOp =
    with_traffic(make_op<ops::MemoryReadWriteKernel>("memory_write", flops, /*assigns_fresh=*/true),
                 ops::memory_write_traffic);
}  // namespace

Var memory_write(Var memory, Var w, Var erase, Var add) {
  const char* op = "memory_write";
  ops::check_write(op, memory, w, erase, add);
  const Shape& m = memory.shape();
  return memory.tape->apply(kOp, {memory, w, erase, add}, m, {}, 0, ops::memory_read_write_scratch(0, m));
}

OpEntry memory_write_entry() {
  return {"memory_write", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = memory_write_inputs(rng, d);
            sample.apply = [](Tape&, std::span<const Var> x) { return memory_write(x[0], x[1], x[2], x[3]); };
            return sample;
          }};
}

}  // namespace matmem
