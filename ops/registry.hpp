/// @file
/// The op registry: one entry per op, used by the tests (every op through gradcheck), `matmem gradcheck`
/// and `matmem bench ops`. A user's own op joins with register_op().
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem {

/// Sizes for sample inputs:
///   * small — odd sizes below any SIMD width (tails only: scalar loops, or one padded SIMD chunk);
///   * large — sizes past several SIMD widths and not multiples of them (vector bodies and their tails);
///   * lanes — small matrices at batch 19, for the ops that run SIMD lanes over the batch (the memory ops):
///     one full vector of the widest SIMD (16 float lanes on AVX-512, two of 8 doubles) and a tail;
///   * paper — the paper's shapes (batch 16, 15x15 hidden, 120 slots of 6x6), for the bench.
enum class SampleSize { small, large, lanes, paper };

/// Sample inputs of an op and the function that applies it to them.
struct OpSample {
  std::vector<GradcheckInput> inputs;  ///< float64 values (converted for float32 benches)
  GradcheckFn apply;                   ///< applies the op to the inputs
};

/// A registered op: its name and how to make sample inputs for it.
struct OpEntry {
  std::string name;  ///< the op's name, as `matmem gradcheck --op NAME` takes it
  std::function<OpSample(Rng&, SampleSize)> sample;  ///< draws sample inputs of a size from the Rng
  /// Tolerance overrides for gradcheck, where the op's conditioning needs them (0: defaults).
  double atol = 0, rtol = 0;
};

/// Every registered op: the built-in ones, then those registered with register_op(), in order.
const std::vector<OpEntry>& op_registry();
/// How often the sample's op is applied to its inputs: once, or twice (applied_twice: every input has two
/// consumers, so a backward that assigns its gradient instead of adding to it fails).
enum class Uses { once, twice };
/// gradcheck of one op on its sample inputs (full Jacobian at SampleSize::small), with the entry's tolerances,
/// applied once or twice.
GradcheckReport gradcheck_op(const OpEntry& entry, SampleSize size = SampleSize::small, std::uint64_t seed = 1234,
                             Uses uses = Uses::once);
/// One check of an op: a sample size and how often the op is applied.
struct OpCheck {
  SampleSize size;  ///< the sample's sizes
  Uses uses;        ///< applied once, or twice to the same inputs
};
/// Every check an op gets, in `matmem gradcheck` and the tests: once at the small, large and lanes sizes, and
/// twice at small and lanes.
const std::vector<OpCheck>& op_checks();
/// "small", "large", "lanes" or "paper", as `matmem gradcheck --size` takes them.
const char* name_of(SampleSize size);
/// "once" or "twice", as `matmem gradcheck` prints them.
const char* name_of(Uses uses);
/// The entry's sample applied twice to the same inputs, y = f(x) + ½ f(x), so that every input has two
/// consumers: the second application's backward runs first, and the first one's must then add into a
/// gradient that already holds a value (the accumulate branch of an op that assigns a fresh gradient).
OpSample applied_twice(OpSample sample);
/// The registered op of that name, or nullptr.
const OpEntry* find_op(const std::string& name);
void register_op(OpEntry entry);  ///< adds an op to the registry; throws if the name is taken

// Helpers for sample makers.
/// A float64 tensor of `shape` with elements uniform in [lo, hi).
Tensor random_tensor(Rng& rng, Shape shape, double lo = -1.0, double hi = 1.0);
/// The sizes of sample inputs for a SampleSize.
struct SampleDims {
  std::int64_t batch, rows, cols, rows2, cols2;  ///< matrices and the outputs of bilinear maps
  std::int64_t slots, mem_rows, mem_cols;        ///< memories
};
/// The sizes of `size`.
SampleDims sample_dims(SampleSize size);
/// A memory write's operands in the ranges the NTM gives them: M [B,N,r,c], w [B,N] and E [B,r,c] in [0, 1],
/// A [B,r,c] (memory_write, and the write of memory_read_write).
std::vector<GradcheckInput> memory_write_inputs(Rng& rng, const SampleDims& d);
// Sample makers at a given count of heads, for the tests (the registry's entries use one count each).
/// cosine_similarity of `keys` keys against a memory.
OpSample cosine_similarity_sample(Rng& rng, SampleSize size, int keys);
/// memory_writes of `writes` writes with `reads` reads.
OpSample memory_writes_sample(Rng& rng, SampleSize size, int writes, int reads);
/// ntm_addressing of `heads` heads in one call.
OpSample ntm_addressing_heads_sample(Rng& rng, SampleSize size, int heads, bool logits = false);

}  // namespace matmem

namespace matmem {
/// Sample for an op of one tensor [B,r,c] with values uniform in [lo, hi].
OpSample unary_sample(Rng& rng, SampleSize size, Var (*op)(Var), double lo, double hi);
}  // namespace matmem

namespace matmem {
/// Samples for a binary elementwise op: equal shapes, a parameter broadcast over the batch, and a per-sample
/// scalar broadcast over a matrix (three applications summed into one output, so one check covers all).
OpSample binary_sample(Rng& rng, SampleSize size, Var (*op)(Var, Var), bool broadcast = true);
}  // namespace matmem
