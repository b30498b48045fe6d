// The graph ops (ops/graph.hpp) by value: neighbour_mean, neighbour_attention and neighbour_stack on a small
// hand-made graph, against their header's formulas written out as plain loops over the neighbour lists, and
// the graph's rules checked by name: a node with no neighbours reads zeros, a neighbour listed twice counts
// twice, a node may list itself. Their gradients are checked with every op's (gradcheck_all_test.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "op_testing.hpp"
#include "matmem/ops/graph.hpp"

using namespace matmem;
using matmem::testing::logical;

namespace {
// 5 nodes: 0 has no neighbours; 1 lists 2 twice and 4; 2 lists only itself; 3 lists four (0, 1, 2, 4);
// 4 lists 3 and 1.
const std::vector<std::vector<std::int64_t>> kLists = {{}, {2, 2, 4}, {2}, {0, 1, 2, 4}, {3, 1}};

Neighbours graph_of(const std::vector<std::vector<std::int64_t>>& lists) {
  Neighbours g;
  for (const auto& l : lists) {
    g.index.insert(g.index.end(), l.begin(), l.end());
    g.offsets.push_back(std::int64_t(g.index.size()));
  }
  g.check();
  return g;
}

// A float64 batch [N,r,c] with distinct, irregular elements.
Tensor states(std::int64_t N, std::int64_t r, std::int64_t c, double phase) {
  return logical(matrices(N, r, c), [&](std::int64_t b, std::int64_t i, std::int64_t j) {
    return std::sin(phase + 1.3 * double(b) + 0.7 * double(i) + 0.45 * double(j * (b + 1)));
  });
}

// Tolerances for a float64 or float32 run of the kernels.
double tolerance(DType d) { return d == DType::f64 ? 1e-12 : 1e-5; }
}  // namespace

TEST_CASE("neighbour_mean: Y_i is the mean of the listed neighbours' matrices, zeros with none",
          "[ops][graph]") {
  const Neighbours g = graph_of(kLists);
  const std::int64_t N = 5, r = 2, c = 3;
  const Tensor x64 = states(N, r, c, 0.2);
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO((dtype == DType::f64 ? "float64" : "float32"));
    const Tensor x = x64.to(dtype);
    Tape tape(dtype);
    const Tensor y = neighbour_mean(tape.input(x), g).value_copy();
    REQUIRE(y.shape() == matrices(N, r, c));
    const double tol = tolerance(dtype);
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t a = 0; a < r; ++a)
        for (std::int64_t b = 0; b < c; ++b) {
          double sum = 0;
          for (std::int64_t j : kLists[std::size_t(i)]) sum += x64.at(j, a, b);
          const double want = kLists[std::size_t(i)].empty() ? 0.0 : sum / double(kLists[std::size_t(i)].size());
          INFO("node " << i << " element (" << a << "," << b << ")");
          CHECK(y.at(i, a, b) == Approx(want).margin(tol));
        }
    // The rules by name: node 0 reads zeros; node 1 weighs X_2 twice, (2 X_2 + X_4) / 3, not (X_2 + X_4) / 2;
    // node 2 reads itself.
    for (std::int64_t a = 0; a < r; ++a)
      for (std::int64_t b = 0; b < c; ++b) {
        CHECK(y.at(0, a, b) == 0.0);
        CHECK(y.at(1, a, b) == Approx((2 * x64.at(2, a, b) + x64.at(4, a, b)) / 3).margin(tol));
        CHECK(y.at(2, a, b) == Approx(x64.at(2, a, b)).margin(tol));
      }
  }
}

TEST_CASE("neighbour_attention: head k's softmax over node i's neighbours of ⟨Q_k,i, X_j⟩, heads stacked by rows",
          "[ops][graph][attention]") {
  const Neighbours g = graph_of(kLists);
  const std::int64_t N = 5, r = 2, c = 3, heads = 2;
  const Tensor x64 = states(N, r, c, 0.2);
  // Queries of a size that makes the weights far from uniform (scores spread over several units).
  std::vector<Tensor> q64;
  for (std::int64_t k = 0; k < heads; ++k) {
    Tensor q = states(N, r, c, 1.1 + 2.3 * double(k));
    for (std::int64_t t = 0; t < q.numel(); ++t) q.set(t, 1.5 * q.get(t));
    q64.push_back(q);
  }
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO((dtype == DType::f64 ? "float64" : "float32"));
    const Tensor x = x64.to(dtype);
    std::vector<Tensor> qt;
    for (const Tensor& q : q64) qt.push_back(q.to(dtype));
    Tape tape(dtype);
    std::vector<Var> queries;
    for (const Tensor& q : qt) queries.push_back(tape.input(q));
    const Tensor y = neighbour_attention(tape.input(x), queries, g).value_copy();
    REQUIRE(y.shape() == matrices(N, heads * r, c));
    const double tol = tolerance(dtype);
    double spread = 0;  // the largest gap between a node's weights: the scores must not all be alike
    for (std::int64_t k = 0; k < heads; ++k)
      for (std::int64_t i = 0; i < N; ++i) {
        const auto& list = kLists[std::size_t(i)];
        std::vector<double> w;  // one weight per listing, softmax over the listings
        double z = 0;
        for (std::int64_t j : list) {
          double s = 0;
          for (std::int64_t a = 0; a < r; ++a)
            for (std::int64_t b = 0; b < c; ++b) s += q64[std::size_t(k)].at(i, a, b) * x64.at(j, a, b);
          w.push_back(std::exp(s));
          z += w.back();
        }
        for (double& v : w) v /= z;
        for (std::size_t e = 0; e < w.size(); ++e)
          for (std::size_t f = 0; f < w.size(); ++f) spread = std::max(spread, std::abs(w[e] - w[f]));
        for (std::int64_t a = 0; a < r; ++a)
          for (std::int64_t b = 0; b < c; ++b) {
            double want = 0;
            for (std::size_t e = 0; e < list.size(); ++e) want += w[e] * x64.at(list[e], a, b);
            INFO("head " << k << ", node " << i << ", element (" << a << "," << b << ")");
            CHECK(y.at(i, k * r + a, b) == Approx(want).margin(tol));
          }
      }
    CHECK(spread > 0.3);
    // The rules by name: no neighbours, zeros in every head; the only neighbour (node 2 itself) has weight 1.
    for (std::int64_t a = 0; a < heads * r; ++a)
      for (std::int64_t b = 0; b < c; ++b) {
        CHECK(y.at(0, a, b) == 0.0);
        CHECK(y.at(2, a, b) == Approx(x64.at(2, a % r, b)).margin(tol));
      }
  }
  SECTION("zero queries weigh every listing alike: the read is neighbour_mean's, a repeated neighbour twice") {
    Tensor zero(DType::f64, matrices(N, r, c));
    Tape tape(DType::f64);
    const Var zq[1] = {tape.input(zero)};
    const Tensor y = neighbour_attention(tape.input(x64), zq, g).value_copy();
    for (std::int64_t a = 0; a < r; ++a)
      for (std::int64_t b = 0; b < c; ++b) {
        CHECK(y.at(1, a, b) == Approx((2 * x64.at(2, a, b) + x64.at(4, a, b)) / 3).epsilon(1e-12));
        CHECK(y.at(3, a, b) ==
              Approx((x64.at(0, a, b) + x64.at(1, a, b) + x64.at(2, a, b) + x64.at(4, a, b)) / 4).epsilon(1e-12));
      }
  }
}

TEST_CASE("neighbour_stack: Y_i = [X_{j_1} … X_{j_k}] side by side in listing order, zero-padded, the first k",
          "[ops][graph]") {
  const Neighbours g = graph_of(kLists);
  const std::int64_t N = 5, k = 3;
  // r = 1: 001's vector CLN, Y_i the k × c matrix of i's neighbours' vectors flattened row by row.
  for (std::int64_t r : {std::int64_t(1), std::int64_t(2)}) {
    const std::int64_t c = 3;
    INFO("states " << r << "x" << c);
    const Tensor x = states(N, r, c, 0.9);
    Tape tape(DType::f64);
    const Tensor y = neighbour_stack(tape.input(x), g, k).value_copy();
    REQUIRE(y.shape() == matrices(N, r, k * c));
    for (std::int64_t i = 0; i < N; ++i) {
      const auto& list = kLists[std::size_t(i)];
      for (std::int64_t a = 0; a < r; ++a)
        for (std::int64_t e = 0; e < k; ++e)
          for (std::int64_t b = 0; b < c; ++b) {
            const double want = e < std::int64_t(list.size()) ? x.at(list[std::size_t(e)], a, b) : 0.0;
            INFO("node " << i << ", slot " << e << ", element (" << a << "," << b << ")");
            CHECK(y.at(i, a, e * c + b) == want);
          }
    }
    // The rules by name: node 3 lists four and keeps its first three (0, 1, 2), node 1's repeat fills two
    // slots, node 0 is all zeros.
    for (std::int64_t a = 0; a < r; ++a)
      for (std::int64_t b = 0; b < c; ++b) {
        CHECK(y.at(3, a, 0 * c + b) == x.at(0, a, b));
        CHECK(y.at(3, a, 2 * c + b) == x.at(2, a, b));
        CHECK(y.at(1, a, 0 * c + b) == x.at(2, a, b));
        CHECK(y.at(1, a, 1 * c + b) == x.at(2, a, b));
        CHECK(y.at(1, a, 2 * c + b) == x.at(4, a, b));
        for (std::int64_t e = 0; e < k; ++e) CHECK(y.at(0, a, e * c + b) == 0.0);
      }
  }
}
