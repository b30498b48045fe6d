// layer_norm: normalise each group of n elements to mean 0 and variance 1 (Ba, Kiros & Hinton 2016; 004 §7.4),
//   m = (1/n) Σ_k x_k,  v = (1/n) Σ_k (x_k − m)²,  s = 1/√(v + ε),  y_k = (x_k − m) s;
//   grad_x_k += s (g_k − (1/n) Σ_j g_j − y_k (1/n) Σ_j g_j y_j).
// A group is one sample's whole matrix (LayerNormOver::matrix, n = r·c) or one row of it (LayerNormOver::rows,
// n = c). x:[B,r,c] -> [B,r,c]; a memory is refused, and so is a group of fewer than 2 elements (its output
// would be 0 whatever x is). No gain and bias here: the model applies them with hadamard and add (a parameter
// [r,c] broadcasts over the batch). Backward reuses the output y and keeps only s per group (attrs: i[0] the
// mode, f[0] ε).
//
// Layout (runtime/shape.hpp): row i of sample b is the c contiguous elements at (i·B + b)·c, so a row group is
// contiguous and a matrix group is r segments of c elements, B·c apart.
#include <cmath>

#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
// Group g's segments: `segments` runs of `c` contiguous elements; run k starts at start(g, k).
struct Groups {
  std::int64_t count, segments, c, batch;
  bool matrix;
  std::int64_t start(std::int64_t g, std::int64_t k) const { return matrix ? (k * batch + g) * c : g * c; }
  std::int64_t size() const { return segments * c; }
};
Groups groups_of(const Shape& s, std::int64_t mode) {
  const bool matrix = mode == std::int64_t(LayerNormOver::matrix);
  return {matrix ? s.batch : s.batch * s.rows, matrix ? s.rows : 1, s.cols, s.batch, matrix};
}

template <class T>
struct LayerNormKernel {
  static void forward(const OpCall<T>& c) {
    const Groups G = groups_of(c.y_shape, c.attrs.i[0]);
    const double eps = c.attrs.f[0], n = double(G.size());
    const T* x = c.x[0];
    for (std::int64_t g = 0; g < G.count; ++g) {
      double sum = 0;
      for (std::int64_t k = 0; k < G.segments; ++k)
        for (std::int64_t j = 0, o = G.start(g, k); j < G.c; ++j) sum += double(x[o + j]);
      const double m = sum / n;
      double ss = 0;  // two passes: no cancellation for a large mean
      for (std::int64_t k = 0; k < G.segments; ++k)
        for (std::int64_t j = 0, o = G.start(g, k); j < G.c; ++j) ss += (double(x[o + j]) - m) * (double(x[o + j]) - m);
      const double s = 1.0 / std::sqrt(ss / n + eps);
      c.saved[g] = T(s);
      for (std::int64_t k = 0; k < G.segments; ++k)
        for (std::int64_t j = 0, o = G.start(g, k); j < G.c; ++j) c.y[o + j] = T((double(x[o + j]) - m) * s);
    }
  }
  static void backward(const OpCall<T>& c) {
    T* gx = c.grad_x[0];
    if (!gx) return;
    const Groups G = groups_of(c.y_shape, c.attrs.i[0]);
    const double n = double(G.size());
    const T *y = c.y, *gy = c.grad_y;
    for (std::int64_t g = 0; g < G.count; ++g) {
      double sg = 0, sgy = 0;
      for (std::int64_t k = 0; k < G.segments; ++k)
        for (std::int64_t j = 0, o = G.start(g, k); j < G.c; ++j) {
          sg += double(gy[o + j]);
          sgy += double(gy[o + j]) * double(y[o + j]);
        }
      const double s = double(c.saved[g]), mg = sg / n, mgy = sgy / n;
      for (std::int64_t k = 0; k < G.segments; ++k)
        for (std::int64_t j = 0, o = G.start(g, k); j < G.c; ++j)
          gx[o + j] += T(s * (double(gy[o + j]) - mg - double(y[o + j]) * mgy));
    }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {5.0 * y.numel(), 6.0 * y.numel()}; }
constexpr OpDef kOp = make_op<LayerNormKernel>("layer_norm", flops);
}  // namespace

Var layer_norm(Var x, LayerNormOver over, double eps) {
  if (!x.valid()) throw Error("layer_norm: the operand is an empty Var");
  const Shape& s = x.shape();
  if (s.slots != 1) ops::shape_error("layer_norm", "expects a batch of matrices [B,r,c], not a memory", x);
  const std::int64_t n = over == LayerNormOver::matrix ? s.rows * s.cols : s.cols;
  if (n < 2)
    ops::shape_error("layer_norm", over == LayerNormOver::matrix
                                       ? "normalising over a matrix of one element gives 0 for any input"
                                       : "normalising over rows of one element gives 0 for any input",
                     x);
  if (!(eps > 0)) throw Error(fmt::format("layer_norm: ε must be > 0, got {}", eps));
  OpAttrs attrs;
  attrs.i[0] = std::int64_t(over);
  attrs.f[0] = eps;
  const std::int64_t groups = over == LayerNormOver::matrix ? s.batch : s.batch * s.rows;
  return x.tape->apply(kOp, {x}, s, attrs, groups);
}

OpEntry layer_norm_entry() {
  // Both modes in one sample, each on an input of its own so that each backward is checked alone; values in
  // [-1, 2] so that the groups' means are far from 0.
  return {"layer_norm", [](Rng& rng, SampleSize size) {
            const SampleDims d = sample_dims(size);
            OpSample s;
            s.inputs = {{"x (over matrix)", random_tensor(rng, matrices(d.batch, d.rows, d.cols), -1.0, 2.0)},
                        {"x (over rows)", random_tensor(rng, matrices(d.batch, d.rows, d.cols), -1.0, 2.0)}};
            s.apply = [](Tape&, std::span<const Var> v) {
              return add(layer_norm(v[0], LayerNormOver::matrix), layer_norm(v[1], LayerNormOver::rows));
            };
            return s;
          }};
}

}  // namespace matmem
