// neighbour_stack: node i's first k neighbours side by side (ops/graph.hpp), zeros after the last.
//   Y_i = [X_{j_1} X_{j_2} … X_{j_k}], j_e the e-th neighbour of i (X_{j_e} = 0 for e > |N(i)|).
//   X:[N,r,c] -> [N, r, k·c];   grad_X_{j_e} += columns e·c .. e·c + c − 1 of grad_Y_i.
// For vector states (r = 1) Y_i is the flattened k × c matrix of i's neighbours (001 §4.4's vector CLN).
// Element (b,i,j) of a batch of matrices is at (i·N + b)·c + j (runtime/shape.hpp).
#include <algorithm>
#include <cstdint>

#include "matmem/ops/check.hpp"
#include "matmem/ops/graph.hpp"
#include "matmem/ops/graph_attrs.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {
namespace {
using ops::graph_of;

template <class T>
struct NeighbourStackKernel {
  static void forward(const OpCall<T>& c) {
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.x_shape[0];
    const std::int64_t N = s.batch, C = s.cols, K = c.attrs.i[1], YC = K * C;
    std::fill_n(c.y, c.y_shape.numel(), T(0));
    for (std::int64_t r = 0; r < s.rows; ++r)
      for (std::int64_t b = 0; b < N; ++b) {
        const std::int64_t e0 = g.offsets[b], used = std::min(K, g.degree(b));
        for (std::int64_t e = 0; e < used; ++e)
          std::copy_n(c.x[0] + (r * N + g.index[e0 + e]) * C, C, c.y + (r * N + b) * YC + e * C);
      }
  }
  static void backward(const OpCall<T>& c) {
    T* gx = c.grad_x[0];
    if (!gx) return;
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.x_shape[0];
    const std::int64_t N = s.batch, C = s.cols, K = c.attrs.i[1], YC = K * C;
    for (std::int64_t r = 0; r < s.rows; ++r)
      for (std::int64_t b = 0; b < N; ++b) {
        const std::int64_t e0 = g.offsets[b], used = std::min(K, g.degree(b));
        for (std::int64_t e = 0; e < used; ++e) {
          const T* gy = c.grad_y + (r * N + b) * YC + e * C;
          T* d = gx + (r * N + g.index[e0 + e]) * C;
          for (std::int64_t j = 0; j < C; ++j) d[j] += gy[j];
        }
      }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs&) { return {0.0, double(y.numel())}; }
constexpr OpDef kOp = make_op<NeighbourStackKernel>("neighbour_stack", flops);
}  // namespace

Var neighbour_stack(Var x, const Neighbours& graph, std::int64_t k) {
  if (!x.valid()) throw Error("neighbour_stack: the operand is an empty Var");
  const Shape& s = x.shape();
  if (s.slots != 1) ops::shape_error("neighbour_stack", "needs a batch of matrices [N,r,c], not a memory", x);
  if (s.batch != graph.nodes())
    throw ShapeError(fmt::format("neighbour_stack: {}: the batch must equal the graph's {} nodes", s.str(), graph.nodes()));
  if (k < 1 || k > 4096) throw Error(fmt::format("neighbour_stack: {} neighbours: choose 1 to 4096", k));
  OpAttrs a;
  ops::set_graph(a, graph);
  a.i[1] = k;
  return x.tape->apply(kOp, {x}, matrices(s.batch, s.rows, k * s.cols), a);
}

OpEntry neighbour_stack_entry() {
  return {"neighbour_stack", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"X", random_tensor(rng, matrices(d.batch, d.rows, d.cols))}};
            auto g = ops::sample_graph(rng, d.batch);
            // 3 slots: nodes of degree 4 drop their last neighbour, smaller ones are zero-padded.
            sample.apply = [g](Tape&, std::span<const Var> v) { return neighbour_stack(v[0], *g, 3); };
            return sample;
          }};
}

}  // namespace matmem
