// The CLN's forward by value (models/graph/cln.hpp): one pass over a small hand-made graph, its logits against
// the header's formulas written out as plain loops over std::vector matrices, with the model's own parameter
// values read out of params() (perturbed off their initialisation, so no bias is zero and no gate is flat).
// Each aggregate is checked (the mean over neighbours, the attention heads, the flattened neighbours of the
// vector CLN), with and without the highway gates, with either embedding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "matmem/models/core/model_gradcheck.hpp"
#include "../reference_math.hpp"
#include "matmem/models/graph/cln.hpp"
#include "matmem/models/tasks/tasks.hpp"

using namespace matmem;

namespace {
using testing::ref::Mat;
using testing::ref::param;

// The model's term `path/term`: U_termᵀ x V_term.
Mat term(const Model& m, const std::string& path, const std::string& name, const Mat& x) {
  return testing::ref::bilinear(x, param(m, path + "/" + name + "/U"), param(m, path + "/" + name + "/V"));
}

// prefix followed by k: "layer2".
std::string numbered(const char* prefix, std::int64_t k) {
  std::string s = prefix;
  s += std::to_string(k);
  return s;
}

// 5 nodes: 0 has no neighbours; 1 lists 2 twice and 4; 2 lists only itself; 3 lists four (0, 1, 2, 4), more
// than the flattened read's 3 slots; 4 lists 3 and 1.
const std::vector<std::vector<std::int64_t>> kLists = {{}, {2, 2, 4}, {2}, {0, 1, 2, 4}, {3, 1}};
constexpr std::int64_t kNodes = 5, kWords = 6, kClasses = 3;

// Node i's features: a row of kWords values in [0, 1).
double feature(std::int64_t i, std::int64_t w) { return 0.5 + 0.5 * std::sin(0.9 * double(i) + 1.7 * double(w) + 0.3); }

// The header's CLN written out: the logits of every node, one 1 × K row each.
std::vector<Mat> reference_logits(const CLN& m) {
  const CLNConfig& c = m.config();
  const std::size_t N = std::size_t(kNodes);
  std::vector<Mat> h(N);
  for (std::size_t i = 0; i < N; ++i) {
    Mat x(1, kWords);
    for (std::int64_t w = 0; w < kWords; ++w) x(0, w) = feature(std::int64_t(i), w);
    // dense: Σ_{k=1..r} U_{x,k}ᵀ X V_{x,k} + B;  matrix: U_xᵀ X V_x + B.
    Mat pre = param(m, "embed/B");
    if (c.embed == CLNConfig::Embed::dense)
      for (std::int64_t k = 1; k <= c.rows; ++k)  // one term "x" when r = 1, else x1..xr
        pre = pre + term(m, "embed", c.rows == 1 ? std::string("x") : numbered("x", k), x);
    else
      pre = pre + term(m, "embed", "x", x);
    h[i] = relu(pre);
  }
  for (std::int64_t t = 1; t <= c.height; ++t) {
    const std::string layer = numbered("layer", t);
    std::vector<Mat> read(N);
    for (std::size_t i = 0; i < N; ++i) {
      const auto& list = kLists[i];
      if (c.aggregate == CLNConfig::Aggregate::mean) {  // (1/|N(i)|) Σ_j H_j, zeros for no neighbours
        read[i] = Mat(c.rows, c.cols);
        for (std::int64_t j : list) read[i] = read[i] + h[std::size_t(j)];
        if (!list.empty())
          for (double& e : read[i].a) e /= double(list.size());
      } else if (c.aggregate == CLNConfig::Aggregate::flatten) {  // [H_{j_1} … H_{j_k}], r × k·c
        read[i] = Mat(c.rows, c.slots * c.cols);
        for (std::int64_t e = 0; e < std::min<std::int64_t>(c.slots, std::int64_t(list.size())); ++e)
          for (std::int64_t a = 0; a < c.rows; ++a)
            for (std::int64_t b = 0; b < c.cols; ++b) read[i](a, e * c.cols + b) = h[std::size_t(list[std::size_t(e)])](a, b);
      } else {  // head k: Q = U_qᵀ H_i V_q + B_q, α = softmax_j ⟨Q, H_j⟩_F, rows k·r.. of the read Σ_j α_j H_j
        read[i] = Mat(c.heads * c.rows, c.cols);
        for (std::int64_t k = 0; k < c.heads; ++k) {
          const std::string query = layer + numbered("/query", k + 1);
          const Mat q = term(m, query, "h", h[i]) + param(m, query + "/B");
          std::vector<double> w;
          double z = 0;
          for (std::int64_t j : list) {
            double s = 0;
            for (std::size_t e = 0; e < q.a.size(); ++e) s += q.a[e] * h[std::size_t(j)].a[e];
            w.push_back(std::exp(s));
            z += w.back();
          }
          for (std::size_t e = 0; e < list.size(); ++e)
            for (std::int64_t a = 0; a < c.rows; ++a)
              for (std::int64_t b = 0; b < c.cols; ++b)
                read[i](k * c.rows + a, b) += w[e] / z * h[std::size_t(list[e])](a, b);
        }
      }
    }
    std::vector<Mat> next(N);
    for (std::size_t i = 0; i < N; ++i) {
      // Ĥ = relu(U_sᵀ H V_s + U_nᵀ H̃ V_n + B)
      next[i] = relu(term(m, layer, "self", h[i]) + term(m, layer, "neighbours", read[i]) + param(m, layer + "/B"));
      if (c.highway) {  // Z = sigm(U_zᵀ H V_z + B_z), H' = Z ⊙ Ĥ + (1 − Z) ⊙ H
        const Mat pre = term(m, layer + "/gate", "h", h[i]) + param(m, layer + "/gate/B");
        for (std::size_t e = 0; e < pre.a.size(); ++e) {
          const double z = 1.0 / (1.0 + std::exp(-pre.a[e]));
          next[i].a[e] = z * next[i].a[e] + (1 - z) * h[i].a[e];
        }
      }
    }
    h = next;
  }
  std::vector<Mat> logits(N);
  for (std::size_t i = 0; i < N; ++i) logits[i] = term(m, "out", "h", h[i]) + param(m, "out/B");
  return logits;
}

// The model's logits on the graph: one pass, every node labelled.
Tensor model_logits(CLN& m) {
  Sequence seq;
  seq.kind = TargetKind::classes;
  Tensor& x = seq.add_input(DType::f64, matrices(kNodes, 1, kWords));
  for (std::int64_t i = 0; i < kNodes; ++i)
    for (std::int64_t w = 0; w < kWords; ++w) x.set(x.shape().offset(i, 0, 0, w), feature(i, w));
  Tensor& y = seq.add_target(DType::f64, matrices(kNodes, 1, kClasses), 0);
  for (std::int64_t i = 0; i < kNodes; ++i) y.set(y.shape().offset(i, 0, 0, i % kClasses), 1.0);
  auto g = std::make_shared<Neighbours>();
  for (const auto& l : kLists) {
    g->index.insert(g->index.end(), l.begin(), l.end());
    g->offsets.push_back(std::int64_t(g->index.size()));
  }
  g->check();
  seq.graph = g;
  Tape tape(DType::f64);
  Unroller u(m, tape);
  return u.run(seq).logits.at(0).value_copy();
}

CLNConfig config(std::int64_t rows, std::int64_t cols, CLNConfig::Aggregate a, bool highway) {
  CLNConfig c;
  c.rows = rows, c.cols = cols, c.height = 2, c.aggregate = a, c.heads = 2, c.slots = 3, c.highway = highway;
  c.input_rows = 1, c.input_cols = kWords, c.output_rows = 1, c.output_cols = kClasses;
  return c;
}

void check_forward(const CLNConfig& c) {
  CLN m(c, DType::f64, 11);
  m.build();
  perturb_parameters(m, 0.3, 17);
  const Tensor y = model_logits(m);
  const std::vector<Mat> want = reference_logits(m);
  REQUIRE(y.shape() == matrices(kNodes, 1, kClasses));
  double largest = 0;
  for (std::int64_t i = 0; i < kNodes; ++i)
    for (std::int64_t k = 0; k < kClasses; ++k) {
      INFO("node " << i << ", class " << k);
      CHECK(y.at(i, 0, k) == Approx(want[std::size_t(i)](0, k)).epsilon(1e-10).margin(1e-12));
      largest = std::max(largest, std::abs(want[std::size_t(i)](0, k)));
    }
  CHECK(largest > 0.1);  // the logits are not all but zero
}
}  // namespace

TEST_CASE("CLN forward: the mean over neighbours and the highway gates, as the header writes them",
          "[models][graph]") {
  using A = CLNConfig::Aggregate;
  SECTION("matrix 2x3 states, highway") { check_forward(config(2, 3, A::mean, true)); }
  SECTION("matrix 2x3 states, no highway") { check_forward(config(2, 3, A::mean, false)); }
  SECTION("vector states 1x4, highway") { check_forward(config(1, 4, A::mean, true)); }
  SECTION("matrix embedding") {
    CLNConfig c = config(2, 3, A::mean, true);
    c.embed = CLNConfig::Embed::matrix;
    check_forward(c);
  }
}

TEST_CASE("CLN forward: the flattened neighbours of the vector CLN, first k side by side in listing order",
          "[models][graph]") {
  using A = CLNConfig::Aggregate;
  SECTION("vector states 1x3, 3 slots") { check_forward(config(1, 3, A::flatten, true)); }
  SECTION("matrix states 2x3, 3 slots, no highway") { check_forward(config(2, 3, A::flatten, false)); }
}

TEST_CASE("CLN forward: the multi-attention read, each head a softmax over the neighbours, heads by rows",
          "[models][graph][attention]") {
  using A = CLNConfig::Aggregate;
  SECTION("matrix 2x3 states, 2 heads, highway") { check_forward(config(2, 3, A::attention, true)); }
  SECTION("vector states 1x4, 2 heads") { check_forward(config(1, 4, A::attention, false)); }
}
