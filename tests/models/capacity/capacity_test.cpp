// Tests for models/capacity/capacity.*: eq. 49, the Fisher memory curves (eqs. 12–18, 24), Corollary 2.1,
// Theorem 3, the vector network (eq. 14) and a Monte-Carlo check of the Fisher information.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>

#include "matmem/models/capacity/capacity.hpp"
#include "matmem/models/capacity/generators.hpp"
#include "matmem/models/capacity/stein.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using namespace matmem::capacity;
using Catch::Matchers::Contains;

namespace {

const Noise kNoise{0.7, 1.3};  // ε₁ ≠ ε₂ so that a misplaced ε shows

void check_close(double a, double b, double rel) { CHECK(a == Approx(b).epsilon(rel).margin(1e-14)); }

void check_curves(const MemoryCurve& a, const MemoryCurve& b, double rel) {
  REQUIRE(a.j.size() == b.j.size());
  for (std::size_t i = 0; i < a.j.size(); ++i) {
    INFO("i = " << i);
    CHECK(a.j[i] == Approx(b.j[i]).epsilon(rel).margin(1e-14 * std::max(1.0, a.j[0])));
  }
  check_close(a.total, b.total, rel);
}

}  // namespace

TEST_CASE("eq. 49: Ψ and Σ solve the discrete Lyapunov equations to 1e-10 (relative to max|Ψ|)", "[capacity]") {
  Rng rng(1);
  for (Connectivity kind : {Connectivity::normal, Connectivity::nonnormal})
    for (auto [r, c] : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 2}, {3, 5}, {8, 8}, {12, 12}, {20, 7}})
      for (double rho : {0.5, 0.99}) {
        const MatrixNet net = random_matrix_net(r, c, kind, rng, kNoise, {0.0, rho, 2.0});
        const Covariances cov = row_column_covariances(net);
        INFO(connectivity_name(kind) << " " << r << "×" << c << ", ρ ≤ " << rho << ", max|Ψ| = "
                                     << xt::amax(xt::abs(detail::to_xt(cov.psi)))() << ", residual " << cov.psi_residual);
        CHECK(cov.psi_residual <= 1e-10);
        CHECK(cov.sigma_residual <= 1e-10);
        // Independent of the solver's own residual: Ψ is the series ε₁ Σ_k U^{kT} U^k, so Ψ ⪰ ε₁ I.
        const auto w = xt::linalg::eigvalsh(detail::to_xt(cov.psi));
        CHECK(xt::amin(w)() >= net.noise.eps1 - 1e-10 * xt::amax(w)());
      }
}

TEST_CASE("eq. 18 (and eq. 17) match the general computation for normal U, V", "[capacity]") {
  Rng rng(2);
  for (std::size_t n : {1, 2, 3, 5, 8, 11}) {
    const MatrixNet net = random_matrix_net(n, n, Connectivity::normal, rng, kNoise);
    INFO("N = " << n);
    check_curves(fmc_normal_eq17(net, 30), fmc_eq12(net, 30), 1e-10);
    check_curves(fmc_normal_exact(net, 30), fmc_exact(net, 30), 1e-10);
  }
  const MatrixNet rect = random_matrix_net(3, 6, Connectivity::normal, rng, kNoise);
  check_curves(fmc_normal_eq17(rect, 10), fmc_eq12(rect, 10), 1e-10);
}

TEST_CASE("the closed forms refuse non-normal connectivity", "[capacity]") {
  Rng rng(3);
  const MatrixNet net = random_matrix_net(4, 4, Connectivity::nonnormal, rng);
  CHECK_FALSE(is_normal(net.u));
  CHECK_THROWS_WITH(fmc_normal_eq17(net, 3), Contains("eqs. 17–18 need a normal U") && Contains("UUᵀ = UᵀU"));
}

TEST_CASE("Corollary 2.1: J_tot,rel of eq. 16 is below 1 for normal convergent U, V", "[capacity]") {
  Rng rng(4);
  for (std::size_t n : {2, 3, 4, 6, 8})
    for (int s = 0; s < 8; ++s) {
      const MatrixNet net = random_matrix_net(n, n, Connectivity::normal, rng, kNoise, {0.0, 0.99, 1.0});
      const double rel = fmc_eq12(net, 0).relative();
      INFO("N = " << n << ", instance " << s << ": J_tot,rel = " << rel);
      CHECK(rel > 0.0);
      CHECK(rel < 1.0);
    }
}

TEST_CASE("the exact capacity of a normal convergent matrix network is exactly the input information",
          "[capacity]") {
  Rng rng(5);
  for (std::size_t n : {2, 3, 5, 8}) {
    const MatrixNet net = random_matrix_net(n, n, Connectivity::normal, rng, kNoise);
    const MemoryCurve exact = fmc_exact(net, 0), paper = fmc_eq12(net, 0);
    INFO("N = " << n);
    CHECK(exact.relative() == Approx(1.0).epsilon(1e-10));
    CHECK(paper.relative() < exact.relative() - 1e-3);  // eq. 16 under-reports
  }
}

TEST_CASE("the vector network's relative capacity tends to 1 (normal A, eq. 14)", "[capacity]") {
  Rng rng(6);
  for (std::size_t n : {4, 16, 36}) {
    const VectorNet net = random_vector_net(n, Connectivity::normal, rng, 0.9);
    const MemoryCurve c = fmc_vector(net, 600);
    const std::vector<double> sum = c.running_sum();
    INFO("neurons = " << n);
    CHECK(c.relative() == Approx(1.0).epsilon(1e-10));
    CHECK(std::is_sorted(sum.begin(), sum.end()));
    CHECK(sum[10] * net.eps < 1.0);
    CHECK(sum.back() * net.eps == Approx(1.0).epsilon(1e-9));  // the partial sums reach the total
  }
}

TEST_CASE("Theorem 3: J_tot,rel ≤ N² on random non-normal instances, eq. 16 and exact", "[capacity]") {
  Rng rng(7);
  double largest_exact = 0;
  for (std::size_t n : {2, 3, 4, 6})
    for (double strength : {1.0, 4.0, 30.0, 100.0})
      for (int s = 0; s < 3; ++s) {
        const MatrixNet net = random_matrix_net(n, n, Connectivity::nonnormal, rng, kNoise, {0.0, 0.95, strength});
        const double paper = fmc_eq12(net, 0).relative(), exact = fmc_exact(net, 0).relative();
        INFO("N = " << n << ", strength " << strength << ": eq. 16 " << paper << ", exact " << exact);
        CHECK(paper > 0);
        CHECK(paper <= double(n * n));
        CHECK(exact <= double(n * n));
        largest_exact = std::max(largest_exact, exact);
      }
  CHECK(largest_exact > 1.5);  // the instances are non-normal enough for the bound to be a real test
}

TEST_CASE("Theorem 3 on amplifying delay lines, the most non-normal connectivity", "[capacity]") {
  // U = V = 0.1 I + a S (S the upper shift), W = e₁e₁ᵀ: the signal is passed along and amplified.
  for (std::size_t n : {2, 3, 4})
    for (double a : {2.0, 20.0}) {
      MatrixNet net{Matrix(n, n), Matrix(n, n), Matrix(n, n), kNoise};
      for (std::size_t i = 0; i < n; ++i) net.u(i, i) = net.v(i, i) = 0.1;
      for (std::size_t i = 0; i + 1 < n; ++i) net.u(i, i + 1) = net.v(i, i + 1) = a;
      net.w(0, 0) = 1.0;
      const double paper = fmc_eq12(net, 0).relative(), exact = fmc_exact(net, 0).relative();
      INFO("N = " << n << ", a = " << a << ": eq. 16 " << paper << ", exact " << exact);
      CHECK(exact > 0.9 * double(n));  // well above the normal networks' 1 ...
      CHECK(exact <= double(n * n));   // ... and within the bound
      CHECK(paper <= double(n * n));
    }
}

TEST_CASE("the exact curve is eq. 14 for the vectorised network A = Uᵀ ⊗ Vᵀ", "[capacity]") {
  Rng rng(8);
  const MatrixNet net = random_matrix_net(3, 4, Connectivity::nonnormal, rng, kNoise);
  check_curves(fmc_exact(net, 25), fmc_vector(vectorise(net), 25), 1e-10);
}

TEST_CASE("J_tot is the whole infinite sum of J(i)", "[capacity]") {
  Rng rng(9);
  const MatrixNet net = random_matrix_net(4, 3, Connectivity::nonnormal, rng, kNoise, {0.0, 0.8, 2.0});
  for (const MemoryCurve& c : {fmc_eq12(net, 400), fmc_exact(net, 400)}) {
    CHECK(c.running_sum().back() == Approx(c.total).epsilon(1e-10));
    CHECK(c.running_sum()[0] < c.total * (1 - 1e-3));
  }
}

TEST_CASE("gauge (cU, V/c): the exact curve is unchanged, eq. 12 is not", "[capacity]") {
  Rng rng(10);
  const MatrixNet net = random_matrix_net(3, 3, Connectivity::normal, rng, kNoise, {0.3, 0.8, 1.0});
  const MatrixNet same = rescaled(net, 1.2);  // ρ(U) ≤ 0.96 stays convergent
  check_curves(fmc_exact(same, 10), fmc_exact(net, 10), 1e-10);
  CHECK(std::abs(fmc_eq12(same, 0).total - fmc_eq12(net, 0).total) > 1e-3);
}

TEST_CASE("input checks: shapes, noise, convergence", "[capacity]") {
  Rng rng(11);
  MatrixNet net = random_matrix_net(3, 2, Connectivity::normal, rng);
  MatrixNet bad = net;
  bad.v = Matrix::identity(3);
  CHECK_THROWS_WITH(fmc_eq12(bad, 2), Contains("with W 3×2 needs U 3×3 and V 2×2, got U 3×3 and V 3×3"));
  bad = net;
  bad.noise.eps1 = 0;
  CHECK_THROWS_WITH(fmc_exact(bad, 2), Contains("noise variances must be positive, got ε₁ = 0, ε₂ = "));
  bad = net;
  bad.u = Matrix::identity(3);
  bad.u(0, 0) = 1.2;  // ρ(U) > 1
  CHECK_THROWS_WITH(fmc_eq12(bad, 2), Contains("U must be convergent") && Contains("ρ(U) = 1.2"));
}

// Monte Carlo: simulate the noisy network from rest, estimate the state covariance from independent runs and
// the mean's derivative ∂M/∂s_i from the noiseless response to an impulse i steps back, and form the Fisher
// information ĝᵀ Ĉ⁻¹ ĝ (a Gaussian location family). With R runs in p dimensions R Ĉ is Wishart, so
// ĵ = J · R / χ²_{R−p+1}: mean J R/(R−p−1), relative standard deviation ≈ √(2/R).
namespace {

struct Simulator {
  const MatrixNet& net;
  std::size_t r, c;
  // X ← Uᵀ X V + W s + σ G, G iid N(0,1), σ² = ε₁ε₂ (the variance of each entry of Z ~ MN(0, ε₁I, ε₂I)).
  void step(std::vector<double>& x, double s, double sigma, Rng& rng, std::vector<double>& tmp) const {
    std::fill(tmp.begin(), tmp.end(), 0.0);
    for (std::size_t a = 0; a < r; ++a)  // tmp = Uᵀ X
      for (std::size_t i = 0; i < r; ++i)
        for (std::size_t j = 0; j < c; ++j) tmp[a * c + j] += net.u(i, a) * x[i * c + j];
    for (std::size_t a = 0; a < r; ++a)
      for (std::size_t b = 0; b < c; ++b) {
        double v = 0;
        for (std::size_t j = 0; j < c; ++j) v += tmp[a * c + j] * net.v(j, b);
        x[a * c + b] = v + net.w(a, b) * s + (sigma > 0 ? sigma * rng.normal() : 0.0);
      }
  }
};

}  // namespace

TEST_CASE("Monte Carlo: simulated trajectories' Fisher information matches the exact J(i), not eq. 12",
          "[capacity][montecarlo]") {
  Rng gen(2024);
  const std::size_t r = 2, c = 3, p = r * c;
  const MatrixNet net = random_matrix_net(r, c, Connectivity::nonnormal, gen, Noise{0.5, 3.0}, {0.0, 0.75, 1.0});
  const Simulator sim{net, r, c};
  const int steps = 40, lags = 4;
  const std::size_t runs = 100000;
  const double sigma = std::sqrt(net.noise.eps1 * net.noise.eps2);
  Rng rng(7);
  std::vector<double> x(p), tmp(p);
  xt::xtensor<double, 2> cov = xt::zeros<double>({p, p});
  for (std::size_t run = 0; run < runs; ++run) {
    std::fill(x.begin(), x.end(), 0.0);
    for (int t = 0; t < steps; ++t) sim.step(x, 0.0, sigma, rng, tmp);
    for (std::size_t i = 0; i < p; ++i)
      for (std::size_t j = 0; j < p; ++j) cov(i, j) += x[i] * x[j] / double(runs);
  }
  const auto cov_inv = xt::linalg::inv(cov);
  const MemoryCurve exact = fmc_exact(net, lags), paper = fmc_eq12(net, lags);
  const double unbias = double(runs - p - 1) / double(runs), sd = std::sqrt(2.0 / double(runs));
  for (int lag = 0; lag <= lags; ++lag) {
    std::fill(x.begin(), x.end(), 0.0);  // noiseless response to s = 1 at `lag` steps back
    for (int t = 0; t < steps; ++t) sim.step(x, t == steps - 1 - lag ? 1.0 : 0.0, 0.0, rng, tmp);
    double j_mc = 0;
    for (std::size_t i = 0; i < p; ++i)
      for (std::size_t k = 0; k < p; ++k) j_mc += x[i] * cov_inv(i, k) * x[k];
    j_mc *= unbias;
    const double j = exact.j[std::size_t(lag)];
    INFO("lag " << lag << ": Monte Carlo " << j_mc << ", exact " << j << ", eq. 12 " << paper.j[std::size_t(lag)]);
    CHECK(std::abs(j_mc - j) <= 4.0 * sd * j);
    if (lag == 0) CHECK(std::abs(j_mc - paper.j[0]) > 10.0 * sd * j);  // eq. 12 is rejected
  }
}
