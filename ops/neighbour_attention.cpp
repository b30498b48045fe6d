// neighbour_attention: n heads over each node's neighbours (ops/graph.hpp, 001 §3.1 eq. 13).
//   s_ij = ⟨Q_k,i, X_j⟩_F, α_i = softmax_{j∈N(i)} s_i, O_k,i = Σ_j α_ij X_j;  Y_i = [O_1,i; …; O_n,i].
//   X, Q_k:[N,r,c] -> [N, n·r, c]
//   d_ij = ⟨G_k,i, X_j⟩_F, e_ij = α_ij (d_ij − Σ_l α_il d_il):
//   grad_X_j += α_ij G_k,i + e_ij Q_k,i,   grad_Q_k,i += Σ_j e_ij X_j.
// Element (b,i,j) of a batch of matrices is at (i·N + b)·c + j (runtime/shape.hpp); the kernels copy X into
// a node-contiguous scratch first (below). α is recomputed in backward. Scratch: 2·N·r·c + 3·r·c + 2·max degree.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "matmem/ops/check.hpp"
#include "matmem/ops/graph.hpp"
#include "matmem/ops/graph_attrs.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
using ops::graph_of;

template <class T>
struct NeighbourAttentionKernel {
  // The kernels work on node-contiguous copies: lane b's r × c matrix as r·c consecutive elements (in the
  // batch-interleaved layout its rows lie N·c apart), so every dot product and weighted sum is one
  // contiguous loop. gather/scatter move lane b between the two layouts (rows `row0`.. of a [N,·,c] tensor).
  static void gather(const T* x, std::int64_t b, std::int64_t row0, std::int64_t N, std::int64_t R, std::int64_t C,
                     T* out) {
    for (std::int64_t r = 0; r < R; ++r) std::copy_n(x + ((row0 + r) * N + b) * C, C, out + r * C);
  }
  static void scatter_add(const T* in, std::int64_t b, std::int64_t row0, std::int64_t N, std::int64_t R,
                          std::int64_t C, T* x) {
    for (std::int64_t r = 0; r < R; ++r) {
      T* d = x + ((row0 + r) * N + b) * C;
      for (std::int64_t j = 0; j < C; ++j) d[j] += in[r * C + j];
    }
  }
  static T dot(const T* a, const T* b, std::int64_t n) {
    T acc = 0;
    for (std::int64_t k = 0; k < n; ++k) acc += a[k] * b[k];
    return acc;
  }
  // α of node b for query q (node-contiguous), into alpha[0..deg); xt the node-contiguous X.
  static void weights(const Neighbours& g, const T* q, const T* xt, std::int64_t b, std::int64_t D, T* alpha) {
    const std::int64_t e0 = g.offsets[b], deg = g.degree(b);
    T m = -INFINITY;
    for (std::int64_t e = 0; e < deg; ++e) m = std::max(m, alpha[e] = dot(q, xt + g.index[e0 + e] * D, D));
    T z = 0;
    for (std::int64_t e = 0; e < deg; ++e) z += alpha[e] = std::exp(alpha[e] - m);
    for (std::int64_t e = 0; e < deg; ++e) alpha[e] /= z;
  }
  static void forward(const OpCall<T>& c) {
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.x_shape[0];
    const std::int64_t N = s.batch, R = s.rows, C = s.cols, D = R * C, heads = c.arity - 1;
    T *xt = c.scratch, *q = xt + N * D, *o = q + D, *alpha = o + D;
    for (std::int64_t b = 0; b < N; ++b) gather(c.x[0], b, 0, N, R, C, xt + b * D);
    std::fill_n(c.y, c.y_shape.numel(), T(0));
    for (std::int64_t k = 0; k < heads; ++k)
      for (std::int64_t b = 0; b < N; ++b) {
        const std::int64_t e0 = g.offsets[b], deg = g.degree(b);
        if (deg == 0) continue;
        gather(c.x[1 + k], b, 0, N, R, C, q);
        weights(g, q, xt, b, D, alpha);
        std::fill_n(o, D, T(0));
        for (std::int64_t e = 0; e < deg; ++e) {
          const T* x = xt + g.index[e0 + e] * D;
          const T a = alpha[e];
          for (std::int64_t j = 0; j < D; ++j) o[j] += a * x[j];
        }
        scatter_add(o, b, k * R, N, R, C, c.y);
      }
  }
  static void backward(const OpCall<T>& c) {
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.x_shape[0];
    const std::int64_t N = s.batch, R = s.rows, C = s.cols, D = R * C, heads = c.arity - 1;
    T *xt = c.scratch, *gxt = xt + N * D, *q = gxt + N * D, *gy = q + D, *gq = gy + D, *alpha = gq + D;
    T* d = alpha + std::max<std::int64_t>(g.max_degree(), 1);
    for (std::int64_t b = 0; b < N; ++b) gather(c.x[0], b, 0, N, R, C, xt + b * D);
    T* gx = c.grad_x[0];
    if (gx) std::fill_n(gxt, N * D, T(0));
    for (std::int64_t k = 0; k < heads; ++k) {
      T* gqk = c.grad_x[1 + k];
      for (std::int64_t b = 0; b < N; ++b) {
        const std::int64_t e0 = g.offsets[b], deg = g.degree(b);
        if (deg == 0) continue;
        gather(c.x[1 + k], b, 0, N, R, C, q);
        gather(c.grad_y, b, k * R, N, R, C, gy);
        weights(g, q, xt, b, D, alpha);
        T mean_d = 0;
        for (std::int64_t e = 0; e < deg; ++e) mean_d += alpha[e] * (d[e] = dot(gy, xt + g.index[e0 + e] * D, D));
        std::fill_n(gq, D, T(0));
        for (std::int64_t e = 0; e < deg; ++e) {
          const std::int64_t jn = g.index[e0 + e];
          const T a = alpha[e], ee = a * (d[e] - mean_d);
          if (gx) {
            T* dst = gxt + jn * D;
            for (std::int64_t j = 0; j < D; ++j) dst[j] += a * gy[j] + ee * q[j];
          }
          const T* x = xt + jn * D;
          for (std::int64_t j = 0; j < D; ++j) gq[j] += ee * x[j];
        }
        if (gqk) scatter_add(gq, b, 0, N, R, C, gqk);
      }
    }
    if (gx)
      for (std::int64_t b = 0; b < N; ++b) scatter_add(gxt + b * D, b, 0, N, R, C, gx);
  }
};
Flops flops(const Shape* x, int arity, const Shape&, const OpAttrs& a) {
  const double per = double(x[0].rows * x[0].cols) * double(graph_of(a).index.size()) * double(arity - 1);
  return {4 * per, 8 * per};
}
constexpr OpDef kOp = make_op<NeighbourAttentionKernel>("neighbour_attention", flops);
}  // namespace

Var neighbour_attention(Var x, std::span<const Var> queries, const Neighbours& graph) {
  if (!x.valid()) throw Error("neighbour_attention: the operand is an empty Var");
  if (queries.empty() || queries.size() > 64)
    throw Error(fmt::format("neighbour_attention: {} queries: give 1 to 64 heads", queries.size()));
  const Shape& s = x.shape();
  if (s.slots != 1) ops::shape_error("neighbour_attention", "needs a batch of matrices [N,r,c], not a memory", x);
  if (s.batch != graph.nodes())
    throw ShapeError(
        fmt::format("neighbour_attention: {}: the batch must equal the graph's {} nodes", s.str(), graph.nodes()));
  std::vector<Var> in{x};
  for (const Var& q : queries) {
    ops::same_tape("neighbour_attention", x, q);
    if (q.shape() != s) ops::shape_error("neighbour_attention", "each query must have the shape of X", q, x);
    in.push_back(q);
  }
  OpAttrs a;
  ops::set_graph(a, graph);
  const std::int64_t n = std::int64_t(queries.size());
  const std::int64_t nodes = s.batch * s.rows * s.cols, one = s.rows * s.cols;
  return x.tape->apply(kOp, in, matrices(s.batch, n * s.rows, s.cols), a, 0,
                       2 * nodes + 3 * one + 2 * std::max<std::int64_t>(graph.max_degree(), 1));
}

OpEntry neighbour_attention_entry() {
  return {"neighbour_attention", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"X", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"Q1", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"Q2", random_tensor(rng, matrices(d.batch, d.rows, d.cols))}};
            auto g = ops::sample_graph(rng, d.batch);
            sample.apply = [g](Tape&, std::span<const Var> v) { return neighbour_attention(v[0], v.subspan(1), *g); };
            return sample;
          }};
}

}  // namespace matmem
