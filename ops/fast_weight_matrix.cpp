// vec_outer: y_b[p,q] = vec(a_b)[p] vec(b_b)[q].   a:[B,r,c], b:[B,r',c'] -> [B, rc, r'c']
//   grad_a_b[p] += Σ_q g_b[p,q] vec(b_b)[q],   grad_b_b[q] += Σ_p g_b[p,q] vec(a_b)[p]
// vec_matvec: vec(y_b)[p] = Σ_q m_b[p,q] vec(x_b)[q].   m:[B,n,n], x:[B,r,c], n = rc -> [B,r,c]
//   grad_m_b[p,q] += vec(g_b)[p] vec(x_b)[q],   grad_x_b[q] += Σ_p m_b[p,q] vec(g_b)[p]
// Layout (runtime/shape.hpp): element (b,i,j) of [B,r,c] at (i·B + b)·c + j, so vec index p = i·c + j of
// sample b is at (i·B + b)·c + j, and row p of m_b is contiguous at (p·B + b)·n.
#include "matmem/ops/fast_weight_matrix.hpp"

#include <algorithm>
#include <vector>

#include "matmem/ops/check.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
// Sample b of a [B,r,c] batch gathered into a vector (vec, row-major), and scattered back added.
template <class T>
void gather(const T* x, const Shape& s, std::int64_t b, T* out) {
  for (std::int64_t i = 0; i < s.rows; ++i)
    for (std::int64_t j = 0; j < s.cols; ++j) out[i * s.cols + j] = x[(i * s.batch + b) * s.cols + j];
}
template <class T>
void scatter_add(const T* v, const Shape& s, std::int64_t b, T* x) {
  for (std::int64_t i = 0; i < s.rows; ++i)
    for (std::int64_t j = 0; j < s.cols; ++j) x[(i * s.batch + b) * s.cols + j] += v[i * s.cols + j];
}

template <class T>
struct VecOuterKernel {
  static void forward(const OpCall<T>& c) {
    const Shape &sa = c.x_shape[0], &sb = c.x_shape[1];
    const std::int64_t B = sa.batch, m = sa.rows * sa.cols, n = sb.rows * sb.cols;
    std::vector<T> a(static_cast<std::size_t>(m)), v(static_cast<std::size_t>(n));
    for (std::int64_t b = 0; b < B; ++b) {
      gather(c.x[0], sa, b, a.data());
      gather(c.x[1], sb, b, v.data());
      for (std::int64_t p = 0; p < m; ++p) {
        T* y = c.y + (p * B + b) * n;
        for (std::int64_t q = 0; q < n; ++q) y[q] = a[std::size_t(p)] * v[std::size_t(q)];
      }
    }
  }
  static void backward(const OpCall<T>& c) {
    const Shape &sa = c.x_shape[0], &sb = c.x_shape[1];
    const std::int64_t B = sa.batch, m = sa.rows * sa.cols, n = sb.rows * sb.cols;
    std::vector<T> a(static_cast<std::size_t>(m)), v(static_cast<std::size_t>(n)), ga(static_cast<std::size_t>(m)), gv(static_cast<std::size_t>(n));
    for (std::int64_t b = 0; b < B; ++b) {
      gather(c.x[0], sa, b, a.data());
      gather(c.x[1], sb, b, v.data());
      std::fill(ga.begin(), ga.end(), T(0));
      std::fill(gv.begin(), gv.end(), T(0));
      for (std::int64_t p = 0; p < m; ++p) {
        const T* g = c.grad_y + (p * B + b) * n;
        T acc = 0;
        for (std::int64_t q = 0; q < n; ++q) {
          acc += g[q] * v[std::size_t(q)];
          gv[std::size_t(q)] += g[q] * a[std::size_t(p)];
        }
        ga[std::size_t(p)] = acc;
      }
      if (c.grad_x[0]) scatter_add(ga.data(), sa, b, c.grad_x[0]);
      if (c.grad_x[1]) scatter_add(gv.data(), sb, b, c.grad_x[1]);
    }
  }
};

template <class T>
struct VecMatvecKernel {
  static void forward(const OpCall<T>& c) {
    const Shape& sx = c.x_shape[1];
    const std::int64_t B = sx.batch, n = sx.rows * sx.cols;
    std::vector<T> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
    for (std::int64_t b = 0; b < B; ++b) {
      gather(c.x[1], sx, b, x.data());
      for (std::int64_t p = 0; p < n; ++p) {
        const T* row = c.x[0] + (p * B + b) * n;
        T acc = 0;
        for (std::int64_t q = 0; q < n; ++q) acc += row[q] * x[std::size_t(q)];
        y[std::size_t(p)] = acc;
      }
      for (std::int64_t i = 0; i < sx.rows; ++i)
        for (std::int64_t j = 0; j < sx.cols; ++j) c.y[(i * B + b) * sx.cols + j] = y[std::size_t(i * sx.cols + j)];
    }
  }
  static void backward(const OpCall<T>& c) {
    const Shape& sx = c.x_shape[1];
    const std::int64_t B = sx.batch, n = sx.rows * sx.cols;
    std::vector<T> x(static_cast<std::size_t>(n)), g(static_cast<std::size_t>(n)), gx(static_cast<std::size_t>(n));
    for (std::int64_t b = 0; b < B; ++b) {
      gather(c.x[1], sx, b, x.data());
      gather(c.grad_y, sx, b, g.data());
      std::fill(gx.begin(), gx.end(), T(0));
      for (std::int64_t p = 0; p < n; ++p) {
        const T gp = g[std::size_t(p)];
        const T* row = c.x[0] + (p * B + b) * n;
        if (c.grad_x[0]) {
          T* gm = c.grad_x[0] + (p * B + b) * n;
          for (std::int64_t q = 0; q < n; ++q) gm[q] += gp * x[std::size_t(q)];
        }
        for (std::int64_t q = 0; q < n; ++q) gx[std::size_t(q)] += row[q] * gp;
      }
      if (c.grad_x[1]) scatter_add(gx.data(), sx, b, c.grad_x[1]);
    }
  }
};

Flops outer_flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {double(y.numel()), 4.0 * y.numel()}; }
Flops matvec_flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  return {2.0 * x[0].numel(), 4.0 * x[0].numel()};
}
constexpr OpDef kOuter = make_op<VecOuterKernel>("vec_outer", outer_flops);
constexpr OpDef kMatvec = make_op<VecMatvecKernel>("vec_matvec", matvec_flops);
}  // namespace

Var vec_outer(Var a, Var b) {
  ops::same_tape("vec_outer", a, b);
  if (a.shape().slots != 1 || b.shape().slots != 1)
    ops::shape_error("vec_outer", "needs two batches of matrices [B,r,c], not memories", a, b);
  if (a.shape().batch != b.shape().batch) ops::shape_error("vec_outer", "batch sizes differ", a, b);
  const Shape &sa = a.shape(), &sb = b.shape();
  return a.tape->apply(kOuter, {a, b}, matrices(sa.batch, sa.rows * sa.cols, sb.rows * sb.cols));
}

Var vec_matvec(Var m, Var x) {
  ops::same_tape("vec_matvec", m, x);
  const Shape &sm = m.shape(), &sx = x.shape();
  const std::int64_t n = sx.rows * sx.cols;
  if (sm.slots != 1 || sx.slots != 1 || sm.batch != sx.batch || sm.rows != n || sm.cols != n)
    ops::shape_error("vec_matvec", "needs m [B,n,n] and x [B,r,c] with n = r·c", m, x);
  return m.tape->apply(kMatvec, {m, x}, sx);
}

OpEntry vec_outer_entry() {
  return {"vec_outer", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"a", random_tensor(rng, matrices(d.batch, d.rows, 2), -1.0, 1.0)},
                             {"b", random_tensor(rng, matrices(d.batch, 2, d.cols), -1.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> v) { return vec_outer(v[0], v[1]); };
            return sample;
          }};
}

OpEntry vec_matvec_entry() {
  return {"vec_matvec", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            const std::int64_t n = 2 * d.rows;
            OpSample sample;
            sample.inputs = {{"m", random_tensor(rng, matrices(d.batch, n, n), -1.0, 1.0)},
                             {"x", random_tensor(rng, matrices(d.batch, 2, d.rows), -1.0, 1.0)}};
            sample.apply = [](Tape&, std::span<const Var> v) { return vec_matvec(v[0], v[1]); };
            return sample;
          }};
}

}  // namespace matmem
