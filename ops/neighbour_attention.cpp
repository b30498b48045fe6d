// neighbour_attention: n heads over each node's neighbours (ops/graph.hpp, 001 §3.1 eq. 13).
//   s_ij = ⟨Q_k,i, X_j⟩_F, α_i = softmax_{j∈N(i)} s_i, O_k,i = Σ_j α_ij X_j;  Y_i = [O_1,i; …; O_n,i].
//   X, Q_k:[N,r,c] -> [N, n·r, c]
//   d_ij = ⟨G_k,i, X_j⟩_F, e_ij = α_ij (d_ij − Σ_l α_il d_il):
//   grad_X_j += α_ij G_k,i + e_ij Q_k,i,   grad_Q_k,i += Σ_j e_ij X_j.
// Element (b,i,j) of a batch of matrices is at (i·N + b)·c + j (runtime/shape.hpp); α is recomputed in
// backward into scratch (2 · max degree elements).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/check.hpp"
#include "ops/graph.hpp"
#include "ops/registry.hpp"

namespace matmem {
std::shared_ptr<Neighbours> sample_graph(Rng& rng, std::int64_t nodes);  // ops/neighbour_mean.cpp

namespace {
const Neighbours& graph_of(const OpAttrs& a) { return *reinterpret_cast<const Neighbours*>(std::intptr_t(a.i[0])); }

template <class T>
struct NeighbourAttentionKernel {
  // ⟨A_a, B_b⟩_F of lane a of `p` and lane b of `q`, both [N,r,c] (row strides N·c).
  static T dot(const T* p, std::int64_t a, const T* q, std::int64_t b, std::int64_t N, std::int64_t R,
               std::int64_t C) {
    T acc = 0;
    for (std::int64_t r = 0; r < R; ++r) {
      const T *x = p + (r * N + a) * C, *z = q + (r * N + b) * C;
      for (std::int64_t j = 0; j < C; ++j) acc += x[j] * z[j];
    }
    return acc;
  }
  // α of node b, head with query q, into alpha[0..deg).
  static void weights(const Neighbours& g, const T* q, const T* x, std::int64_t b, std::int64_t N, std::int64_t R,
                      std::int64_t C, T* alpha) {
    const std::int64_t e0 = g.offsets[b], deg = g.degree(b);
    T m = -INFINITY;
    for (std::int64_t e = 0; e < deg; ++e) m = std::max(m, alpha[e] = dot(q, b, x, g.index[e0 + e], N, R, C));
    T z = 0;
    for (std::int64_t e = 0; e < deg; ++e) z += alpha[e] = std::exp(alpha[e] - m);
    for (std::int64_t e = 0; e < deg; ++e) alpha[e] /= z;
  }
  static void forward(const OpCall<T>& c) {
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.x_shape[0];
    const std::int64_t N = s.batch, R = s.rows, C = s.cols, heads = c.arity - 1;
    T* alpha = c.scratch;
    for (T* y = c.y; y != c.y + c.y_shape.numel(); ++y) *y = T(0);
    for (std::int64_t k = 0; k < heads; ++k)
      for (std::int64_t b = 0; b < N; ++b) {
        const std::int64_t e0 = g.offsets[b], deg = g.degree(b);
        if (deg == 0) continue;
        weights(g, c.x[1 + k], c.x[0], b, N, R, C, alpha);
        for (std::int64_t r = 0; r < R; ++r) {
          T* y = c.y + ((k * R + r) * N + b) * C;
          for (std::int64_t e = 0; e < deg; ++e) {
            const T* x = c.x[0] + (r * N + g.index[e0 + e]) * C;
            for (std::int64_t j = 0; j < C; ++j) y[j] += alpha[e] * x[j];
          }
        }
      }
  }
  static void backward(const OpCall<T>& c) {
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.x_shape[0];
    const std::int64_t N = s.batch, R = s.rows, C = s.cols, heads = c.arity - 1;
    const std::int64_t D = std::max<std::int64_t>(g.max_degree(), 1);
    T *alpha = c.scratch, *d = alpha + D;
    T* gx = c.grad_x[0];
    for (std::int64_t k = 0; k < heads; ++k) {
      const T* q = c.x[1 + k];
      T* gq = c.grad_x[1 + k];
      const T* gy = c.grad_y + k * R * N * C;  // head k's rows: [N,r,c] at rows k·r.., row stride N·c
      for (std::int64_t b = 0; b < N; ++b) {
        const std::int64_t e0 = g.offsets[b], deg = g.degree(b);
        if (deg == 0) continue;
        weights(g, q, c.x[0], b, N, R, C, alpha);
        T mean_d = 0;
        for (std::int64_t e = 0; e < deg; ++e) mean_d += alpha[e] * (d[e] = dot(gy, b, c.x[0], g.index[e0 + e], N, R, C));
        for (std::int64_t e = 0; e < deg; ++e) {
          const std::int64_t jn = g.index[e0 + e];
          const T ee = alpha[e] * (d[e] - mean_d);
          for (std::int64_t r = 0; r < R; ++r) {
            const std::int64_t ob = (r * N + b) * C, oj = (r * N + jn) * C;
            if (gx)
              for (std::int64_t j = 0; j < C; ++j) gx[oj + j] += alpha[e] * gy[ob + j] + ee * q[ob + j];
            if (gq)
              for (std::int64_t j = 0; j < C; ++j) gq[ob + j] += ee * c.x[0][oj + j];
          }
        }
      }
    }
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
  a.i[0] = std::int64_t(reinterpret_cast<std::intptr_t>(&graph));
  const std::int64_t n = std::int64_t(queries.size());
  return x.tape->apply(kOp, in, matrices(s.batch, n * s.rows, s.cols), a, 0,
                       2 * std::max<std::int64_t>(graph.max_degree(), 1));
}

OpEntry neighbour_attention_entry() {
  return {"neighbour_attention", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"X", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"Q1", random_tensor(rng, matrices(d.batch, d.rows, d.cols))},
                             {"Q2", random_tensor(rng, matrices(d.batch, d.rows, d.cols))}};
            auto g = sample_graph(rng, d.batch);
            sample.apply = [g](Tape&, std::span<const Var> v) { return neighbour_attention(v[0], v.subspan(1), *g); };
            return sample;
          }};
}

}  // namespace matmem
