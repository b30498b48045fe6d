// Graph ops over the batch lanes: each lane b of a batch of matrices [N,r,c] is node b of a graph, and a
// node reads its neighbours' matrices (ops/neighbour_mean.cpp, ops/neighbour_attention.cpp). A header of its
// own, as bilinear.hpp: included by the graph models, not by every op's user.
//
// The graph is a Neighbours list (CSR): node i reads index[offsets[i] .. offsets[i+1]). It is not a tensor
// (it carries no gradient): the ops keep a pointer to it, so it must outlive the tape's backward pass. A
// neighbour may appear more than once (a sample with replacement) and a node may list itself; a node with no
// neighbours reads zeros.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "matmem/autodiff/tape.hpp"

namespace matmem {

struct Neighbours {
  std::vector<std::int64_t> offsets{0};  // nodes + 1 entries, offsets[0] = 0
  std::vector<std::int64_t> index;       // every node's neighbours, one after another
  std::int64_t nodes() const { return std::int64_t(offsets.size()) - 1; }
  std::int64_t degree(std::int64_t i) const { return offsets[std::size_t(i) + 1] - offsets[std::size_t(i)]; }
  std::int64_t max_degree() const;
  // Throws Error unless offsets start at 0, never decrease, and every index is a node.
  void check() const;
};

// neighbour_mean: Y_i = (1/|N(i)|) Σ_{j∈N(i)} X_j (0 for |N(i)| = 0).  X:[N,r,c] -> [N,r,c]   (001 eq. 9, 11)
//   grad_X_j += Σ_{i: j∈N(i)} grad_Y_i / |N(i)|  (once per listing of j).
Var neighbour_mean(Var x, const Neighbours& graph);

// neighbour_attention: n heads reading each node's neighbours (001 §3.1, eq. 13). For node i and head k,
//   s_ij = ⟨Q_k,i, X_j⟩_F  (j ∈ N(i)),   α_i = softmax_j s_i,   O_k,i = Σ_j α_ij X_j,
// and the heads' reads are stacked by rows: Y_i = [O_1,i; …; O_n,i].
//   X, Q_1..Q_n:[N,r,c] -> [N, n·r, c]  (n ≥ 1; a node with no neighbours reads zeros).
// Backward, with G_k,i the rows of grad_Y_i for head k:  d_ij = ⟨G_k,i, X_j⟩_F,  e_ij = α_ij (d_ij − Σ_l α_il d_il),
//   grad_X_j += α_ij G_k,i + e_ij Q_k,i,   grad_Q_k,i += Σ_j e_ij X_j.
// The weights α are recomputed in backward (nothing saved).
Var neighbour_attention(Var x, std::span<const Var> queries, const Neighbours& graph);

// neighbour_stack: node i's first k neighbours side by side, zero-padded: Y_i = [X_{j_1} … X_{j_k}].
//   X:[N,r,c] -> [N, r, k·c]  (r = 1: the flattened k × c matrix of the neighbours' vectors, 001 §4.4's
//   vector CLN); a node with more than k neighbours contributes its first k.
Var neighbour_stack(Var x, const Neighbours& graph, std::int64_t k);

}  // namespace matmem
