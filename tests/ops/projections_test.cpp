// projections against one mat call per projection, in values and in every gradient, with X's gradient
// fresh (projections is X's only consumer) and live (a later consumer of X runs its backward first), with
// T̂ saved and recomputed in backward (Tape::recompute_saved; the same bit for bit).
#include <catch2/catch.hpp>

#include <cstdint>

#include <array>
#include <vector>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

using namespace matmem;

TEST_CASE("projections equal one mat per projection, in values and in every gradient", "[ops]") {
  // Batch 17, X 5x4 into 3x4, 1x1, 1x3, 6x2 and 10x3 (the last two wider than X: U first either way; 10 rows
  // also take U's stacking and its gradient's split past the widths they unroll, ops::move_columns).
  const std::int64_t B = 17, r = 5, c = 4;
  const std::vector<std::pair<std::int64_t, std::int64_t>> outs = {{3, 4}, {1, 1}, {1, 3}, {6, 2}, {10, 3}};
  constexpr std::size_t K = 5;
  for (bool later_consumer : {false, true}) {
    Rng rng(41);
    std::vector<Tensor> in = {random_tensor(rng, matrices(B, r, c))};
    for (auto [rk, ck] : outs) {
      in.push_back(random_tensor(rng, parameter(r, rk)));
      in.push_back(random_tensor(rng, parameter(c, ck)));
      in.push_back(random_tensor(rng, parameter(rk, ck)));
    }
    std::vector<Tensor> g;
    for (auto [rk, ck] : outs) g.push_back(random_tensor(rng, matrices(B, rk, ck)));
    auto run = [&](bool fused, bool recompute) {
      Tape tape(DType::f64);
      tape.set_recompute_above(recompute ? 0 : SIZE_MAX);
      std::vector<Var> x;
      for (const Tensor& t : in) x.push_back(tape.input(t, true));
      std::array<Var, K> y;
      if (fused) {
        std::array<Projection, K> p;
        for (std::size_t k = 0; k < K; ++k) p[k] = {x[1 + 3 * k], x[2 + 3 * k], x[3 + 3 * k]};
        projections(x[0], p, y);
      } else {
        for (std::size_t k = 0; k < K; ++k) y[k] = mat({{x[0], x[1 + 3 * k], x[2 + 3 * k]}}, x[3 + 3 * k]);
      }
      Var loss = sum(hadamard(y[0], tape.input(g[0])));
      for (std::size_t k = 1; k < K; ++k) loss = add(loss, sum(hadamard(y[k], tape.input(g[k]))));
      if (later_consumer) loss = add(loss, sum(hadamard(x[0], x[0])));
      tape.backward(loss);
      std::vector<Tensor> result;
      for (const Var& v : y) result.push_back(v.value_copy());
      for (const Var& v : x) result.push_back(v.grad_copy());
      return result;
    };
    const std::vector<Tensor> fused = run(true, false), separate = run(false, false), recomputed = run(true, true);
    REQUIRE(fused.size() == separate.size());
    REQUIRE(recomputed.size() == fused.size());
    for (std::size_t k = 0; k < fused.size(); ++k)
      for (std::int64_t e = 0; e < fused[k].numel(); ++e) {
        INFO((k < K ? "output " : "gradient of input ") << (k < K ? k : k - K) << " element " << e
                                                          << (later_consumer ? " (grad X added to)" : " (grad X fresh)"));
        CHECK(fused[k].get(e) == Approx(separate[k].get(e)).epsilon(1e-12).margin(1e-13));
        CHECK(recomputed[k].get(e) == fused[k].get(e));
      }
  }
}
