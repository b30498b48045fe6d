// neighbour_mean: Y_i = (1/|N(i)|) Σ_{j∈N(i)} X_j over the batch lanes (ops/graph.hpp).  X:[N,r,c] -> [N,r,c]
//   grad_X_j += grad_Y_i / |N(i)| for every listing of j in N(i).
// Rows are contiguous in the batch-interleaved layout (runtime/shape.hpp): element (b,i,j) at (i·N + b)·c + j.
#include <cstdint>

#include "matmem/ops/check.hpp"
#include "matmem/ops/graph.hpp"
#include "matmem/ops/graph_attrs.hpp"
#include "matmem/ops/registry.hpp"

namespace matmem {

std::int64_t Neighbours::max_degree() const {
  std::int64_t m = 0;
  for (std::int64_t i = 0; i < nodes(); ++i) m = std::max(m, degree(i));
  return m;
}

void Neighbours::check() const {
  if (offsets.empty() || offsets[0] != 0) throw Error("Neighbours: offsets must start at 0");
  for (std::size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1]) throw Error(fmt::format("Neighbours: offsets decrease at node {}", i - 1));
  if (offsets.back() != std::int64_t(index.size()))
    throw Error(fmt::format("Neighbours: offsets end at {} but {} neighbours are listed", offsets.back(), index.size()));
  for (std::int64_t j : index)
    if (j < 0 || j >= nodes()) throw Error(fmt::format("Neighbours: neighbour {} is not one of {} nodes", j, nodes()));
}

namespace {
using ops::graph_of;

template <class T>
struct NeighbourMeanKernel {
  static void forward(const OpCall<T>& c) {
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.y_shape;
    const std::int64_t N = s.batch, C = s.cols;
    for (std::int64_t r = 0; r < s.rows; ++r)
      for (std::int64_t b = 0; b < N; ++b) {
        T* y = c.y + (r * N + b) * C;
        for (std::int64_t j = 0; j < C; ++j) y[j] = T(0);
        const std::int64_t deg = g.degree(b);
        if (deg == 0) continue;
        for (std::int64_t e = g.offsets[b]; e < g.offsets[b + 1]; ++e) {
          const T* x = c.x[0] + (r * N + g.index[e]) * C;
          for (std::int64_t j = 0; j < C; ++j) y[j] += x[j];
        }
        const T inv = T(1) / T(deg);
        for (std::int64_t j = 0; j < C; ++j) y[j] *= inv;
      }
  }
  static void backward(const OpCall<T>& c) {
    T* gx = c.grad_x[0];
    if (!gx) return;
    const Neighbours& g = graph_of(c.attrs);
    const Shape& s = c.y_shape;
    const std::int64_t N = s.batch, C = s.cols;
    for (std::int64_t r = 0; r < s.rows; ++r)
      for (std::int64_t b = 0; b < N; ++b) {
        const std::int64_t deg = g.degree(b);
        if (deg == 0) continue;
        const T inv = T(1) / T(deg);
        const T* gy = c.grad_y + (r * N + b) * C;
        for (std::int64_t e = g.offsets[b]; e < g.offsets[b + 1]; ++e) {
          T* d = gx + (r * N + g.index[e]) * C;
          for (std::int64_t j = 0; j < C; ++j) d[j] += inv * gy[j];
        }
      }
  }
};
Flops flops(const Shape* x, int, const Shape&, const OpAttrs& a) {
  const double per_node = double(x[0].rows * x[0].cols);
  const double edges = double(graph_of(a).index.size());
  return {edges * per_node + x[0].numel(), edges * per_node * 2};
}
constexpr OpDef kOp = make_op<NeighbourMeanKernel>("neighbour_mean", flops);
}  // namespace

Var neighbour_mean(Var x, const Neighbours& graph) {
  if (!x.valid()) throw Error("neighbour_mean: the operand is an empty Var");
  const Shape& s = x.shape();
  if (s.slots != 1) ops::shape_error("neighbour_mean", "needs a batch of matrices [N,r,c], not a memory", x);
  if (s.batch != graph.nodes())
    throw ShapeError(fmt::format("neighbour_mean: {}: the batch must equal the graph's {} nodes", s.str(), graph.nodes()));
  OpAttrs a;
  ops::set_graph(a, graph);
  return x.tape->apply(kOp, {x}, s, a);
}

// A random graph on the sample's batch lanes for the registry's samples: degrees 0..4, repeated neighbours and
// self-loops allowed, node 0 isolated.
std::shared_ptr<Neighbours> ops::sample_graph(Rng& rng, std::int64_t nodes) {
  auto g = std::make_shared<Neighbours>();
  for (std::int64_t i = 0; i < nodes; ++i) {
    const std::int64_t deg = i == 0 ? 0 : rng.uniform_int(std::int64_t(1), std::int64_t(4));
    for (std::int64_t e = 0; e < deg; ++e) g->index.push_back(rng.uniform_int(std::int64_t(0), nodes - 1));
    g->offsets.push_back(std::int64_t(g->index.size()));
  }
  return g;
}

OpEntry neighbour_mean_entry() {
  return {"neighbour_mean", [](Rng& rng, SampleSize s) {
            const SampleDims d = sample_dims(s);
            OpSample sample;
            sample.inputs = {{"X", random_tensor(rng, matrices(d.batch, d.rows, d.cols))}};
            auto g = ops::sample_graph(rng, d.batch);
            sample.apply = [g](Tape&, std::span<const Var> v) { return neighbour_mean(v[0], *g); };
            return sample;
          }};
}

}  // namespace matmem
