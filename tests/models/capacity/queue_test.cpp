// Tests for models/capacity/queue.*: the one-slot queue memory (eqs. 34–47), its stability and its exact
// finite-horizon Fisher information.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>

#include "matmem/models/capacity/generators.hpp"
#include "matmem/models/capacity/queue.hpp"
#include "matmem/models/capacity/stein.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using namespace matmem::capacity;

namespace {
const Noise kNoise{0.8, 1.5};
}

TEST_CASE("queue: the companion matrix's spectral radius is the root formula and is ≥ 1", "[capacity][queue]") {
  Rng rng(1);
  for (Connectivity kind : {Connectivity::normal, Connectivity::nonnormal})
    for (auto [r, c] : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 2}, {2, 3}, {3, 3}}) {
      const MatrixNet net = random_matrix_net(r, c, kind, rng, kNoise);
      const auto mu = xt::linalg::eigvals(detail::to_xt(queue_companion(net)));
      const double rho = xt::amax(xt::abs(mu))();
      INFO(connectivity_name(kind) << " " << r << "×" << c);
      CHECK(queue_spectral_radius(net) == Approx(rho).epsilon(1e-9));
      CHECK(rho >= 1.0 - 1e-12);
    }
}

TEST_CASE("queue: depth 0 of eq. 41 is the memoryless eq. 12/16", "[capacity][queue]") {
  Rng rng(2);
  for (Connectivity kind : {Connectivity::normal, Connectivity::nonnormal}) {
    const MatrixNet net = random_matrix_net(3, 2, kind, rng, kNoise);
    const MemoryCurve base = fmc_eq12(net, 8);
    const QueueCurve q = fmc_queue(net, 8, 0);
    for (std::size_t k = 0; k < base.j.size(); ++k) CHECK(q.curve.j[k] == Approx(base.j[k]).epsilon(1e-10).margin(1e-16));
    CHECK(q.curve.total == Approx(base.total).epsilon(1e-10));
  }
}

TEST_CASE("queue: the normal closed form equals the Stein recursion of eq. 40", "[capacity][queue]") {
  Rng rng(3);
  for (std::size_t n : {2, 3, 4}) {
    const MatrixNet net = random_matrix_net(n, n, Connectivity::normal, rng, kNoise, {0.1, 0.9, 1.0});
    for (int depth : {1, 2, 4}) {
      const QueueCurve a = fmc_queue_normal(net, 6, depth), b = fmc_queue_eq41(net, 6, depth);
      INFO("N = " << n << ", D = " << depth);
      for (std::size_t k = 0; k < a.curve.j.size(); ++k)
        CHECK(a.curve.j[k] == Approx(b.curve.j[k]).epsilon(1e-8).margin(1e-15));
      CHECK(a.curve.total == Approx(b.curve.total).epsilon(1e-8));
    }
  }
}

TEST_CASE("queue: eq. 46 (Woodbury form) equals eq. 41", "[capacity][queue]") {
  Rng rng(4);
  const MatrixNet net = random_matrix_net(3, 3, Connectivity::nonnormal, rng, kNoise, {0.0, 0.8, 1.0});
  const QueueCurve q = fmc_queue_eq41(net, 3, 2);
  for (int k = 0; k <= 3; ++k) CHECK(fmc_queue_eq46(net, k, 2) == Approx(q.curve.j[std::size_t(k)]).epsilon(1e-8));
}

TEST_CASE("queue: for normal U, V the paper's series never raises J_tot and vanishes with depth", "[capacity][queue]") {
  Rng rng(5);
  for (std::size_t n : {2, 4, 6}) {
    const MatrixNet net = random_matrix_net(n, n, Connectivity::normal, rng, kNoise);
    const std::vector<int> depths{0, 1, 2, 5, 10, 50, 200, 1000};
    const std::vector<double> total = queue_total_by_depth(net, depths);
    INFO("N = " << n << ": D=0 " << total[0] << ", D=1 " << total[1] << ", D=1000 " << total.back());
    for (std::size_t i = 1; i < total.size(); ++i) CHECK(total[i] <= total[0] * (1 + 1e-12));
    CHECK(total.back() < 1e-3 * total[0]);
  }
}

TEST_CASE("queue: the true finite-horizon capacity is the input information for normal U, V", "[capacity][queue]") {
  Rng rng(6);
  for (std::size_t n : {2, 3}) {
    const MatrixNet net = random_matrix_net(n, n, Connectivity::normal, rng, kNoise);
    for (int horizon : {5, 15, 30}) {
      const HorizonCurve q = fmc_horizon(net, horizon, true), m = fmc_horizon(net, horizon, false);
      INFO("N = " << n << ", horizon " << horizon << ", cond " << q.condition);
      REQUIRE(q.reliable());
      CHECK(q.curve.relative() == Approx(1.0).epsilon(1e-8));
      CHECK(m.curve.relative() == Approx(1.0).epsilon(1e-8));
    }
  }
}

TEST_CASE("queue: the true finite-horizon capacity obeys Theorem 3's bound for non-normal U, V", "[capacity][queue]") {
  Rng rng(7);
  int checked = 0;
  for (std::size_t n : {2, 3})
    for (double strength : {1.0, 6.0}) {
      const MatrixNet net = random_matrix_net(n, n, Connectivity::nonnormal, rng, kNoise, {0.0, 0.8, strength});
      const HorizonCurve q = fmc_horizon(net, 20, true);
      INFO("N = " << n << ", strength " << strength << ", cond " << q.condition);
      if (!q.reliable()) continue;  // too ill-conditioned to say anything
      ++checked;
      CHECK(q.curve.relative() > 0);
      CHECK(q.curve.relative() <= double(n * n));
    }
  CHECK(checked >= 2);  // at least half the instances were checked
}

TEST_CASE("queue: without memory the finite-horizon curve converges to the stationary exact curve", "[capacity][queue]") {
  Rng rng(8);
  const MatrixNet net = random_matrix_net(2, 3, Connectivity::nonnormal, rng, kNoise, {0.0, 0.7, 1.0});
  const HorizonCurve h = fmc_horizon(net, 200, false);
  const MemoryCurve exact = fmc_exact(net, 5);
  for (std::size_t k = 0; k <= 5; ++k) CHECK(h.curve.j[k] == Approx(exact.j[k]).epsilon(1e-9));
  CHECK(h.curve.total == Approx(exact.total).epsilon(1e-9));
}

TEST_CASE("queue: bad depths and horizons are refused", "[capacity][queue]") {
  Rng rng(9);
  const MatrixNet net = random_matrix_net(2, 2, Connectivity::normal, rng);
  CHECK_THROWS_WITH(fmc_queue(net, 2, -1), Catch::Contains("queue truncation depth must be in [0, ") && Catch::Contains("got -1"));
  CHECK_THROWS_WITH(fmc_queue_eq46(net, 1, 0), Catch::Contains("eq. 46 needs depth ≥ 1"));
  CHECK_THROWS_WITH(fmc_horizon(net, 0, true), Catch::Contains("horizon must be ≥ 1, got 0"));
}
