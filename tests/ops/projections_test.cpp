// projections against one mat call per projection, in values and in every gradient, with X's gradient
// fresh (projections is X's only consumer) and live (a later consumer of X runs its backward first), with
// T̂ (Ẑ) saved and recomputed in backward (Tape::recompute_saved; the same bit for bit), in the matrix form
// and the vector form (r = 1, every U 1x1); and the vector form gradchecked in float64 (the registry's
// sample draws the matrix form).
#include <catch2/catch.hpp>

#include <cstdint>

#include <array>
#include <vector>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;

namespace {

using Outs = std::vector<std::pair<std::int64_t, std::int64_t>>;

void check_against_mats(std::int64_t B, std::int64_t r, std::int64_t c, const Outs& outs) {
  constexpr std::size_t kMax = 8;
  const std::size_t K = outs.size();
  REQUIRE(K <= kMax);
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
      std::array<Var, kMax> y;
      if (fused) {
        std::array<Projection, kMax> p;
        for (std::size_t k = 0; k < K; ++k) p[k] = {x[1 + 3 * k], x[2 + 3 * k], x[3 + 3 * k]};
        projections(x[0], std::span<const Projection>(p.data(), K), std::span<Var>(y.data(), K));
      } else {
        for (std::size_t k = 0; k < K; ++k) y[k] = mat({{x[0], x[1 + 3 * k], x[2 + 3 * k]}}, x[3 + 3 * k]);
      }
      Var loss = sum(hadamard(y[0], tape.input(g[0])));
      for (std::size_t k = 1; k < K; ++k) loss = add(loss, sum(hadamard(y[k], tape.input(g[k]))));
      if (later_consumer) loss = add(loss, sum(hadamard(x[0], x[0])));
      tape.backward(loss);
      std::vector<Tensor> result;
      for (std::size_t k = 0; k < K; ++k) result.push_back(y[k].value_copy());
      for (const Var& v : x) result.push_back(v.grad_copy());
      return result;
    };
    testing::check_fused(run(true, false), run(false, false), run(true, true), [&](std::size_t k) {
      return (k < K ? "output " : "gradient of input ") + std::to_string(k < K ? k : k - K) +
             (later_consumer ? " (grad X added to)" : " (grad X fresh)");
    });
  }
}

}  // namespace

TEST_CASE("projections equal one mat per projection, in values and in every gradient", "[ops]") {
  SECTION("matrix form") {
    // Batch 17, X 5x4 into 3x4, 1x1, 1x3, 6x2 and 10x3 (the last two wider than X: U first either way; 10 rows
    // also take U's stacking and its gradient's split past the widths they unroll, ops::move_columns).
    check_against_mats(17, 5, 4, {{3, 4}, {1, 1}, {1, 3}, {6, 2}, {10, 3}});
  }
  SECTION("vector form") {
    // Batch 5, X 1x12 into 1x1, 1x3, 1x20 (wider than the unrolled moves), 1x1 and 1x6: V first.
    check_against_mats(5, 1, 12, {{1, 1}, {1, 3}, {1, 20}, {1, 1}, {1, 6}});
  }
  SECTION("one 1x1 U among wider ones is the matrix form") {
    check_against_mats(3, 1, 7, {{1, 2}, {2, 3}});
  }
}

TEST_CASE("projections' vector form gradchecks in float64", "[ops][gradcheck]") {
  for (std::int64_t B : {1, 4}) {
    Rng rng(7 + std::uint64_t(B));
    const Outs outs = {{1, 2}, {1, 1}, {1, 9}};
    std::vector<GradcheckInput> in = {{"X", random_tensor(rng, matrices(B, 1, 6))}};
    for (std::size_t k = 0; k < outs.size(); ++k) {
      in.push_back({"U" + std::to_string(k), random_tensor(rng, parameter(1, 1))});
      in.push_back({"V" + std::to_string(k), random_tensor(rng, parameter(6, outs[k].second))});
      in.push_back({"B" + std::to_string(k), random_tensor(rng, parameter(1, outs[k].second))});
    }
    for (bool recompute : {false, true}) {
      INFO("batch " << B << (recompute ? ", Ẑ recomputed" : ", Ẑ saved"));
      // Every output into the loss, two of them squared.
      auto f = [&](Tape& tape, std::span<const Var> x) {
        tape.set_recompute_above(recompute ? 0 : SIZE_MAX);
        std::array<Projection, 3> p;
        for (std::size_t k = 0; k < 3; ++k) p[k] = {x[1 + 3 * k], x[2 + 3 * k], x[3 + 3 * k]};
        std::array<Var, 3> y;
        projections(x[0], p, y);
        return add(add(sum(hadamard(y[0], y[0])), sum(y[1])), sum(hadamard(y[2], y[2])));
      };
      const GradcheckReport report = gradcheck(f, in, nullptr);
      INFO(report.str());
      CHECK(report.passed);
      CHECK(report.elements_checked == 6 * B + 3 + 6 * 12 + 12);
    }
  }
}
