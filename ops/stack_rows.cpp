// stack_rows: the rows of several batches of matrices, one below the other.
//   x_k:[B,r_k,c] (k = 1..K, 1 ≤ K ≤ 64) -> y:[B, Σ r_k, c],  y_b = [x_1,b; x_2,b; …; x_K,b];
//   grad_x_k += the rows of grad_y that x_k filled.
// In matmem's layout (runtime/shape.hpp) row i of a batch is one contiguous block of B·c values, so y is the
// inputs' buffers one after another and the op is K copies. It makes a set of states one matrix whose rows an
// attention reads (ops/attention_read.hpp; the recurrent models' rnn.attention_heads).
#include <algorithm>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct StackRowsKernel {
  static void forward(const OpCall<T>& c) {
    T* y = c.y;
    for (int k = 0; k < c.arity; ++k) y = std::copy(c.x[k], c.x[k] + c.x_shape[k].numel(), y);
  }
  static void backward(const OpCall<T>& c) {
    const T* g = c.grad_y;
    for (int k = 0; k < c.arity; ++k) {
      const std::int64_t n = c.x_shape[k].numel();
      if (T* gx = c.grad_x[k])
        for (std::int64_t i = 0; i < n; ++i) gx[i] += g[i];
      g += n;
    }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {0.0, double(y.numel())}; }
constexpr OpDef kOp = make_op<StackRowsKernel>("stack_rows", flops);
}  // namespace

Var stack_rows(std::span<const Var> parts) {
  if (parts.empty()) throw ShapeError("stack_rows: give at least one matrix");
  if (parts.size() > kStackRowsMaxParts)
    throw ShapeError(fmt::format("stack_rows: {} matrices given, at most {} in one op (stack the stacks)",
                                 parts.size(), kStackRowsMaxParts));
  const Var& first = parts[0];
  std::int64_t rows = 0;
  for (const Var& p : parts) {
    ops::same_tape("stack_rows", first, p);
    const Shape& s = p.shape();
    if (s.slots != 1) ops::shape_error("stack_rows", "each part must be [B,r,c] (a batch of matrices)", p);
    if (s.batch != first.shape().batch || s.cols != first.shape().cols)
      ops::shape_error("stack_rows", "parts must have the same batch and columns", first, p);
    rows += s.rows;
  }
  return first.tape->apply(kOp, parts, matrices(first.shape().batch, rows, first.shape().cols), OpAttrs{});
}

OpEntry stack_rows_entry() {
  return {"stack_rows", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"a", random_tensor(rng, matrices(d.batch, 1, d.cols))},
                             {"b", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"c", random_tensor(rng, matrices(d.batch, 2, d.cols))}};
            // Three parts, and a stack of a stack (the recurrent models' growing set of past states).
            sample.apply = [](Tape&, std::span<const Var> x) {
              const Var ab[] = {x[0], x[1]};
              const Var abc[] = {stack_rows(ab), x[2]};
              const Var bac[] = {x[1], x[0], x[2]};
              return add(stack_rows(abc), scale(stack_rows(bac), 0.5));
            };
            return sample;
          }};
}

}  // namespace matmem
