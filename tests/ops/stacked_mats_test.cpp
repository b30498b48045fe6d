// stacked_mats against one mat per output, in values and in every gradient: terms and outputs of several
// widths, rows and frames of several rows, batch 1 (its V gradients left to the tape, one product over the calls) and 5, X's gradient fresh
// and added to, Z saved and recomputed (the same bit for bit), and over 1, 3 and 7 calls of a recurrence on
// the same stacked V's (a cell's time steps: each call's output is the next call's first term). The
// registry's sample gradchecks it in float64 (gradcheck_all_test.cpp).
#include <catch2/catch.hpp>

#include <cstdint>

#include <array>
#include <vector>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;

namespace {

// Term widths c_t, output widths c'_g; the first term as wide as the first output (the recurrence's state).
// A term of rows > 1 (rows[t]) has its rows weighted by a u of [r_t,1].
void check_against_mats(std::int64_t B, const std::vector<std::int64_t>& terms, const std::vector<std::int64_t>& outs,
                        int calls, bool unit_u, const std::vector<std::int64_t>& rows = {}) {
  auto rows_of = [&](std::size_t t) { return t < rows.size() ? rows[t] : std::int64_t(1); };
  const std::size_t T = terms.size(), G = outs.size();
  REQUIRE(terms[0] == outs[0]);
  for (bool later_consumer : {false, true}) {
    Rng rng(53);
    std::vector<Tensor> xs, v, u, b;
    for (std::size_t t = 0; t < T; ++t) xs.push_back(random_tensor(rng, matrices(B, rows_of(t), terms[t])));
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t g = 0; g < G; ++g) {
        v.push_back(random_tensor(rng, parameter(terms[t], outs[g])));
        u.push_back(random_tensor(rng, parameter(rows_of(t), 1)));
      }
    for (std::size_t g = 0; g < G; ++g) b.push_back(random_tensor(rng, parameter(1, outs[g])));
    std::vector<Tensor> gy;
    for (std::size_t g = 0; g < G; ++g) gy.push_back(random_tensor(rng, matrices(B, 1, outs[g])));
    auto run = [&](bool stacked, bool recompute) {
      Tape tape(DType::f64);
      tape.set_recompute_above(recompute ? 0 : SIZE_MAX);
      std::vector<Var> x, vv, uu, bb;
      for (const Tensor& t : xs) x.push_back(tape.input(t, true));
      for (const Tensor& t : v) vv.push_back(tape.input(t, true));
      for (const Tensor& t : u)
        uu.push_back(unit_u && t.shape() == parameter(1, 1) ? tape.constant(parameter(1, 1), 1.0) : tape.input(t, true));
      for (const Tensor& t : b) bb.push_back(tape.input(t, true));
      std::vector<Var> vs;
      for (std::size_t t = 0; t < T; ++t) vs.push_back(stack_columns(std::span<const Var>(vv.data() + t * G, G)));
      std::vector<Var> in = x, y(G);
      Var loss;
      for (int call = 0; call < calls; ++call) {
        if (stacked) {
          stacked_mats(in, vs, uu, bb, y);
        } else {
          for (std::size_t g = 0; g < G; ++g) {
            std::vector<MatTerm> mt;
            for (std::size_t t = 0; t < T; ++t) mt.push_back({in[t], uu[t * G + g], vv[t * G + g]});
            y[g] = mat(mt, bb[g]);
          }
        }
        for (std::size_t g = 0; g < G; ++g) {
          const Var l = sum(hadamard(y[g], tape.input(gy[g])));
          loss = loss.valid() ? add(loss, l) : l;
        }
        in[0] = tanh(y[0]);  // the next call's first term
      }
      if (later_consumer) loss = add(loss, sum(hadamard(x[0], x[0])));
      tape.backward(loss);
      std::vector<Tensor> result;
      for (const Var& o : y) result.push_back(o.value_copy());
      for (const std::vector<Var>* vars : {&x, &vv, &uu, &bb})
        for (const Var& p : *vars)
          if (p.requires_grad()) result.push_back(p.grad_copy());
      return result;
    };
    testing::check_fused(run(true, false), run(false, false), run(true, true), [&](std::size_t k) {
      return (k < G ? "output " : "gradient ") + std::to_string(k < G ? k : k - G) + ", batch " + std::to_string(B) +
             ", " + std::to_string(calls) + " calls" + (later_consumer ? ", grad X added to" : "");
    });
  }
}

}  // namespace

TEST_CASE("stacked_mats equals one mat per output, in values and in every gradient", "[ops]") {
  for (int calls : {1, 3, 7})
    for (std::int64_t B : {1, 5}) {
      // An LSTM's four gates of a 6-unit state from the state, a 3-value input and a 20-value read.
      check_against_mats(B, {6, 3, 20}, {6, 6, 6, 6}, calls, false);
      // Outputs of other widths (1 and 9), one term.
      check_against_mats(B, {4}, {4, 1, 9}, calls, false);
    }
  SECTION("u held at one (no u gradient, Z not needed)") { check_against_mats(1, {5, 2}, {5, 5}, 3, true); }
  SECTION("a frame of several rows among the terms (its rows weighted by u [r,1])") {
    for (std::int64_t B : {1, 4}) {
      check_against_mats(B, {6, 8, 20}, {6, 6, 6, 6}, 3, false, {1, 3, 1});
      check_against_mats(B, {6, 8}, {6, 6}, 3, true, {1, 2});  // the row's u at one, the frame's learned
    }
  }
}

TEST_CASE("stacked_mats refuses what it cannot take, saying what", "[ops]") {
  Tape tape(DType::f64);
  Rng rng(1);
  const Tensor tx = random_tensor(rng, matrices(2, 1, 3)), tv1 = random_tensor(rng, parameter(3, 4)),
               tv2 = random_tensor(rng, parameter(3, 2)), tu = random_tensor(rng, parameter(1, 1)),
               tb = random_tensor(rng, parameter(1, 2));
  const Var x = tape.input(tx), v1 = tape.input(tv1, true), v2 = tape.input(tv2, true), u = tape.input(tu, true),
            b1 = tape.input(tb, true), b2 = tape.input(tb, true);
  std::array<Var, 2> out;
  const Var xs[] = {x}, us[] = {u, u}, bs[] = {b1, b2};
  const Var narrow[] = {v2}, wide[] = {v1};
  CHECK_THROWS_WITH(stacked_mats(xs, narrow, us, bs, out), Catch::Contains("stacked_mats") && Catch::Contains("[1,3,4]"));
  CHECK_NOTHROW(stacked_mats(xs, wide, us, bs, out));
  const Var one_u[] = {u};
  CHECK_THROWS_WITH(stacked_mats(xs, wide, one_u, bs, out), Catch::Contains("2 u"));
}
