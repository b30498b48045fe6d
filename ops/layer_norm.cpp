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
//
// layer_norm_joint: one group made of several matrices of each sample (an interface vector split into parts
// of different shapes, normalised before the split, as Franke et al. 2018's rsDNC does), composed of
//   layer_norm_moments: x_k:[B,r_k,c_k] (k = 1..K) -> [B,2,1], row 0 the mean m_b, row 1 s_b = 1/√(v_b + ε)
//     over the n = Σ_k r_k c_k elements of sample b;
//     grad x_j += g_m / n − g_s s³ (x_j − m) / n   (∂v/∂x_j = 2 (x_j − m)/n: the mean's own term sums to 0)
// and then y_k = (x_k − m) ⊙ s with sub and hadamard broadcasting [B,1,1], so its gradient is the
// composition's; layer_norm of one matrix is the K = 1 case.
#include <cmath>

#include <fmt/format.h>

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

namespace {
template <class T>
struct MomentsKernel {
  // Element j of part k, sample b: x_k[(i B + b) c_k + j] for row i.
  template <class F>
  static void each(const OpCall<T>& c, std::int64_t b, F&& f) {
    const std::int64_t B = c.y_shape.batch;
    for (int k = 0; k < c.arity; ++k) {
      const std::int64_t r = c.x_shape[k].rows, ck = c.x_shape[k].cols;
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t j = 0, o = (i * B + b) * ck; j < ck; ++j) f(k, o + j);
    }
  }
  static double count(const OpCall<T>& c) {
    double n = 0;
    for (int k = 0; k < c.arity; ++k) n += double(c.x_shape[k].rows * c.x_shape[k].cols);
    return n;
  }
  static void forward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch;
    const double n = count(c), eps = c.attrs.f[0];
    for (std::int64_t b = 0; b < B; ++b) {
      double sum = 0, ss = 0;
      each(c, b, [&](int k, std::int64_t o) { sum += double(c.x[k][o]); });
      const double m = sum / n;
      each(c, b, [&](int k, std::int64_t o) { ss += (double(c.x[k][o]) - m) * (double(c.x[k][o]) - m); });
      c.y[b] = T(m);
      c.y[B + b] = T(1.0 / std::sqrt(ss / n + eps));
    }
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t B = c.y_shape.batch;
    const double n = count(c);
    for (std::int64_t b = 0; b < B; ++b) {
      const double m = double(c.y[b]), s = double(c.y[B + b]);
      const double gm = double(c.grad_y[b]) / n, gs = double(c.grad_y[B + b]) * s * s * s / n;
      each(c, b, [&](int k, std::int64_t o) {
        if (T* gx = c.grad_x[k]) gx[o] += T(gm - gs * (double(c.x[k][o]) - m));
      });
    }
  }
};
Flops moments_flops(const Shape* x, int arity, const Shape&, const OpAttrs&) {
  double n = 0;
  for (int k = 0; k < arity; ++k) n += double(x[k].numel());
  return {3.0 * n, 4.0 * n};
}
constexpr OpDef kMomentsOp = make_op<MomentsKernel>("layer_norm_moments", moments_flops);
}  // namespace

Var layer_norm_moments(std::span<const Var> parts, double eps) {
  const char* op = "layer_norm_moments";
  if (parts.empty()) throw ShapeError(fmt::format("{}: give at least one matrix", op));
  if (parts.size() > kLayerNormMaxParts)
    throw ShapeError(fmt::format("{}: {} matrices given, at most {}", op, parts.size(), kLayerNormMaxParts));
  if (!(eps > 0)) throw Error(fmt::format("{}: ε must be > 0, got {}", op, eps));
  const Shape f = parts[0].shape();  // a copy: apply() may move the tape's nodes
  std::int64_t n = 0;
  for (const Var& p : parts) {
    ops::same_tape(op, parts[0], p);
    const Shape& s = p.shape();
    if (s.slots != 1) ops::shape_error(op, "each part must be [B,r,c] (a batch of matrices), not a memory", p);
    if (s.batch != f.batch) ops::shape_error(op, "parts must have the same batch", parts[0], p);
    n += s.rows * s.cols;
  }
  if (n < 2)
    throw ShapeError(fmt::format("{}: normalising one element gives 0 for any input (the parts hold {})", op, n));
  OpAttrs attrs;
  attrs.f[0] = eps;
  return parts[0].tape->apply(kMomentsOp, parts, matrices(f.batch, 2, 1), attrs);
}

void layer_norm_joint(std::span<const Var> parts, std::span<Var> out, double eps) {
  if (out.size() != parts.size())
    throw Error(fmt::format("layer_norm_joint: {} parts, room for {} outputs", parts.size(), out.size()));
  const Var moments = layer_norm_moments(parts, eps);
  const Var m = row(moments, 0), s = row(moments, 1);  // [B,1] each: a [B,1,1] matrix per sample
  for (std::size_t k = 0; k < parts.size(); ++k) out[k] = hadamard(sub(parts[k], m), s);
}

OpEntry layer_norm_moments_entry() {
  // Three parts of different shapes, values in [-1, 2] (a mean far from 0); the upstream gradient reaches
  // both the mean and the inverse deviation.
  return {"layer_norm_moments", [](Rng& rng, SampleSize size) {
            const SampleDims d = sample_dims(size);
            OpSample s;
            s.inputs = {{"a", random_tensor(rng, matrices(d.batch, d.rows, d.cols), -1.0, 2.0)},
                        {"b", random_tensor(rng, matrices(d.batch, 1, 1), -1.0, 2.0)},
                        {"c", random_tensor(rng, matrices(d.batch, 1, 3), -1.0, 2.0)}};
            s.apply = [](Tape&, std::span<const Var> v) { return layer_norm_moments(v, 1e-6); };
            return s;
          }};
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
