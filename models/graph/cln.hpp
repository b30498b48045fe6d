// Column networks on graphs, in matrix form (001 §3, §3.1; Pham et al. 2017, "Column Networks for Collective
// Classification"). Each node of the graph is a lane of the batch (models/tasks/graph.hpp: the whole graph is
// one batch); its state is a matrix H_i ∈ R^{r×c} (r = 1: vector states of c units, as in
// 001 §4.4).
//
//   H_i^0, the node's features X_i (fr × fc, models/tasks/graph.hpp) embedded (cln.embed):
//     dense (default):  H_i^0 = relu(Σ_{k=1..r} U_{x,k}ᵀ X_i V_{x,k} + B_x), U_{x,k}: fr × r, V_{x,k}: fc × c. For
//       the bag-of-words as a row x (fr = 1) the sum is Σ_k u_k ⊗ (x V_{x,k}): with r terms and the u_k spanning
//       R^r it is any linear map of the W words to r × c matrices, as a dense layer into r·c units is
//       (r·W·c + r² weights against W·r·c). Matrix and vector CLNs of equal units then read the words alike
//       and differ in how they propagate.
//     matrix:  H_i^0 = relu(U_xᵀ X_i V_x + B_x), one bilinear map of the feature matrix (fr·r + fc·c weights; for
//       fr = 1 every H_i^0 is rank one plus B_x).
//   for t = 1..T (the height, 001 §4.4: 5):
//     H̃_i^{t−1} = the neighbours' read (below)                    001 eq. 9, 11, 13
//     Ĥ_i^t = relu(U_{s,t}ᵀ H_i^{t−1} V_{s,t} + U_{n,t}ᵀ H̃_i^{t−1} V_{n,t} + B_t)     001 eq. 10, 12
//     highway (Pham et al.'s CLN, cln.highway): Z = sigm(U_{z,t}ᵀ H_i^{t−1} V_{z,t} + B_{z,t}),
//       H_i^t = Z ⊙ Ĥ_i^t + (1 − Z) ⊙ H_i^{t−1};  else H_i^t = Ĥ_i^t
//   logits_i = U_oᵀ H_i^T V_o + B_o, a row of K classes (U_o: r × 1, V_o: c × K).
//
// The neighbours' read (cln.aggregate):
//   mean (CLN, 001 eq. 9, 11): H̃_i = (1/|N(i)|) Σ_{j∈N(i)} H_j  (ops' neighbour_mean); H̃_i is r × c.
//   attention (multi-attention CLN, 001 §3.1, eq. 13): n heads (cln.heads; 001 §4.4: 10). Head k scores
//     neighbour j of node i by the bilinear form of §3.1, g_k(x, y) = xᵀ W_k y + a_kᵀ x + b_kᵀ y + c_k with
//     x = vec H_i, y = vec H_j, and Λ^(k)_{i·} = softmax_{j∈N(i)} g_k(H_i, H_j). The terms a_kᵀ x + c_k do
//     not depend on j, so they cancel in the softmax over j and are left out; W_k and b_k are taken in matrix
//     form, W_k = V_{q,k} ⊗ U_{q,k} and b_k = vec B_{q,k} (vec by columns):
//       g_k(H_i, H_j) = ⟨U_{q,k}ᵀ H_i V_{q,k} + B_{q,k}, H_j⟩_F = vec(H_i)ᵀ (V_{q,k} ⊗ U_{q,k}) vec(H_j) + vec(B_{q,k})ᵀ vec(H_j)
//     (U_{q,k}: r × r, V_{q,k}: c × c; for r = 1 this is the full bilinear form, W_k = u V_{q,k}). The
//     queries Q_k,i = U_{q,k}ᵀ H_i V_{q,k} + B_{q,k} are one projections op per 16 heads. The
//     heads' reads Λ^(k)_{i·} H are stacked by rows, H̃_i = [Σ_j Λ^(1)_{ij} H_j; …; Σ_j Λ^(n)_{ij} H_j], an
//     n·r × c matrix (001: "concatenated"; for vector states the n × d matrix Uᵀ P of §2.1 eq. 4, P the
//     neighbours' states), which U_{n,t} (n·r × r) and V_{n,t} map back to r × c (ops' neighbour_attention).
//   flatten (001 §4.4's vector CLN: "flattens the matrix of neighbours into vector"): H̃_i = [H_{j_1} … H_{j_k}],
//     node i's first k = cln.slots (50) neighbours side by side, zeros for the missing ones, r × k·c (ops'
//     neighbour_stack); V_{n,t} is k·c × c, so for vector states (r = 1) the read is a dense map of the
//     flattened k × c neighbour matrix. It depends on the neighbours' order: while training a random one (the
//     sample's), at evaluation the sorted list.
// The neighbours N(i) are those the sequence carries (Sequence::graph): while training at most 50 sampled per
// node (task.graph.sample), at evaluation all. Parameters are per layer (not tied across t). L2 regularisation is
// the optimiser's weight_decay (001 §4.4: 5·10⁻⁴).
#pragma once
#include <string>
#include <vector>

#include "matmem/models/core/model.hpp"
#include "matmem/ops/graph.hpp"

namespace matmem {

struct CLNConfig {
  std::int64_t rows = 10, cols = 10;  // node state H_i (rows 1: vector states)
  std::int64_t height = 5;
  enum class Aggregate { mean, attention, flatten } aggregate = Aggregate::mean;
  std::int64_t heads = 10;  // attention only
  std::int64_t slots = 50;  // flatten only: neighbours read, side by side
  bool highway = true;
  enum class Embed { dense, matrix } embed = Embed::dense;  // dense: r ≤ 21 (a mat's terms)
  std::int64_t input_rows = 1, input_cols = 1433, output_rows = 1, output_cols = 7;
};

class CLN : public Model {
 public:
  CLN(const CLNConfig& config, DType dtype, std::uint64_t seed, std::string name = "cln");
  void step(Step& s) override;
  const CLNConfig& config() const { return config_; }

 private:
  CLNConfig config_;
  std::vector<std::string> layer_, gate_, query_;  // per layer; query_: per layer and head
  std::vector<std::string> embed_terms_;
  std::vector<NamedTerm> embed_;
  std::vector<ProjectionSpec> specs_;
  std::vector<Var> queries_;
  Neighbours none_;  // the build pass's graph: no task, no neighbours
};

}  // namespace matmem
