// Internal to the graph ops (neighbour_mean.cpp, neighbour_attention.cpp, neighbour_stack.cpp): the graph an
// op node reads travels in its OpAttrs as a pointer (it is not a tensor, and must outlive the tape's
// backward pass), and the registry's samples draw a small random graph.
#pragma once
#include <cstdint>
#include <memory>

#include "matmem/autodiff/op.hpp"
#include "matmem/ops/graph.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem::ops {

inline void set_graph(OpAttrs& a, const Neighbours& graph) {
  a.i[0] = std::int64_t(reinterpret_cast<std::intptr_t>(&graph));
}
inline const Neighbours& graph_of(const OpAttrs& a) {
  return *reinterpret_cast<const Neighbours*>(std::intptr_t(a.i[0]));
}

// A random graph on `nodes` nodes for an op's gradcheck sample (ops/neighbour_mean.cpp).
std::shared_ptr<Neighbours> sample_graph(Rng& rng, std::int64_t nodes);

}  // namespace matmem::ops
