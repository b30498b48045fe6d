// stack_columns: the columns of several batches of matrices, side by side.
//   x_k:[B,r,c_k] (k = 1..K, 1 ≤ K ≤ 64) -> y:[B, r, Σ c_k],  y_b = [x_1,b | x_2,b | … | x_K,b];
//   grad_x_k += the columns of grad_y that x_k filled.
// In matmem's layout (runtime/shape.hpp) a [B,r,c] batch is r·B rows of c contiguous values (row i of sample b
// is row i B + b), so y is r·B rows of Σ c_k and the op is K strided copies. It puts a model's U_k, or a vector
// model's V_k, side by side once a pass, for projections and stacked_projections (ops/projections.cpp;
// Step::projections), and an LSTM's gates' V's for stacked_mats (Step::mats).
#include <fmt/format.h>

#include "matmem/ops/bilinear.hpp"
#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
template <class T>
struct StackColumnsKernel {
  static void forward(const OpCall<T>& c) {
    const std::int64_t rows = c.y_shape.batch * c.y_shape.rows, C = c.y_shape.cols;
    std::int64_t off = 0;
    for (int k = 0; k < c.arity; ++k) {
      const std::int64_t ck = c.x_shape[k].cols;
      ops::move_columns<false>(c.x[k], ck, c.y + off, C, rows, ck);
      off += ck;
    }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t rows = c.y_shape.batch * c.y_shape.rows, C = c.y_shape.cols;
    std::int64_t off = 0;
    for (int k = 0; k < c.arity; ++k) {
      const std::int64_t ck = c.x_shape[k].cols;
      if (T* gx = c.grad_x[k]) ops::move_columns<true>(c.grad_y + off, C, gx, ck, rows, ck);
      off += ck;
    }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {0.0, double(y.numel())}; }
constexpr OpDef kOp = make_op<StackColumnsKernel>("stack_columns", flops);
}  // namespace

Var stack_columns(std::span<const Var> parts) {
  const char* op = "stack_columns";
  if (parts.empty()) throw ShapeError("stack_columns: give at least one matrix");
  if (parts.size() > kStackColumnsMaxParts)
    throw ShapeError(fmt::format("{}: {} matrices given, at most {} in one op (stack the stacks)", op, parts.size(),
                                 kStackColumnsMaxParts));
  const Var& first = parts[0];
  const Shape f = first.shape();  // a copy: apply() may move the tape's nodes
  std::int64_t cols = 0;
  for (const Var& p : parts) {
    ops::same_tape(op, first, p);
    const Shape& s = p.shape();
    if (s.slots != 1) ops::shape_error(op, "each part must be [B,r,c] (a batch of matrices)", p);
    if (s.batch != f.batch || s.rows != f.rows) ops::shape_error(op, "parts must have the same batch and rows", first, p);
    cols += s.cols;
  }
  return first.tape->apply(kOp, parts, matrices(f.batch, f.rows, cols), OpAttrs{});
}

OpEntry stack_columns_entry() {
  return {"stack_columns", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"a", random_tensor(rng, matrices(d.batch, d.rows, 1))},
                             {"b", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"c", random_tensor(rng, matrices(d.batch, d.rows, 9))}};
            // Three parts (one wider than the moves unroll), a stack of a stack, and a part used twice.
            sample.apply = [](Tape&, std::span<const Var> x) {
              const Var ab[] = {x[0], x[1]};
              const Var abc[] = {stack_columns(ab), x[2]};
              const Var bac[] = {x[1], x[0], x[2]};
              return add(stack_columns(abc), scale(stack_columns(bac), 0.5));
            };
            return sample;
          }};
}

}  // namespace matmem
