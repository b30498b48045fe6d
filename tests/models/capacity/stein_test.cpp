// Tests for models/capacity/stein.*: the Bartels–Stewart solver of X − A X B = C.
#include <catch2/catch.hpp>

#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>

#include "matmem/models/capacity/generators.hpp"
#include "matmem/models/capacity/stein.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using namespace matmem::capacity;
using detail::RMat;

namespace {

RMat random_matrix(std::size_t r, std::size_t c, Rng& rng) {
  RMat m = RMat::from_shape({r, c});
  for (double& x : m) x = rng.normal();
  return m;
}

RMat nonnormal(std::size_t n, Rng& rng, double rho) { return detail::to_xt(random_nonnormal(n, rng, rho, 2.0)); }

}  // namespace

TEST_CASE("Stein solver: X − A X B = C holds to round-off for non-normal A, B of several shapes", "[capacity][stein]") {
  Rng rng(11);
  for (auto [n, m] : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 3}, {5, 4}, {9, 9}, {16, 7}}) {
    for (double rho : {0.5, 0.99}) {
      const RMat a = nonnormal(n, rng, rho), b = nonnormal(m, rng, rho), c = random_matrix(n, m, rng);
      const RMat x = detail::solve_stein(detail::schur(a), detail::schur(b), c);
      const double scale = std::max(1.0, double(xt::amax(xt::abs(x))()));
      INFO("n = " << n << ", m = " << m << ", rho = " << rho);
      CHECK(detail::stein_residual(a, b, c, x) <= 1e-12 * scale);
    }
  }
}

TEST_CASE("Stein solver agrees with the dense Kronecker solve (I − Bᵀ ⊗ A) vec X = vec C", "[capacity][stein]") {
  Rng rng(12);
  const std::size_t n = 3, m = 2;
  const RMat a = nonnormal(n, rng, 0.9), b = nonnormal(m, rng, 0.9), c = random_matrix(n, m, rng);
  const RMat x = detail::solve_stein(detail::schur(a), detail::schur(b), c);
  // Row-major vec: vec(A X B) = (A ⊗ Bᵀ) vec(X).
  const RMat k = xt::eye<double>(n * m) - detail::kron(a, RMat(xt::transpose(b)));
  const RMat rhs = xt::reshape_view(c, {n * m, std::size_t(1)});
  const RMat dense = xt::linalg::solve(k, rhs);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) CHECK(x(i, j) == Approx(dense(i * m + j, 0)).epsilon(1e-12).margin(1e-12));
}

TEST_CASE("Stein solver on Kronecker Schur forms solves the N²-dimensional equation", "[capacity][stein]") {
  Rng rng(13);
  const RMat u = nonnormal(3, rng, 0.8), v = nonnormal(2, rng, 0.8);
  const RMat a = detail::kron(u, v);
  const RMat c = random_matrix(6, 6, rng);
  const RMat x = detail::solve_stein(detail::kron(detail::schur(u), detail::schur(v)),
                                     detail::schur(RMat(xt::transpose(a))), c);
  CHECK(detail::stein_residual(a, RMat(xt::transpose(a)), c, x) <= 1e-12 * std::max(1.0, double(xt::amax(xt::abs(x))())));
}

TEST_CASE("Stein solver refuses ρ(A)ρ(B) ≥ 1", "[capacity][stein]") {
  const RMat a = {{1.2, 0.0}, {0.0, 0.1}}, b = {{0.9}};
  CHECK_THROWS_WITH(detail::solve_stein(detail::schur(a), detail::schur(b), RMat({{1.0}, {1.0}})),
                    Catch::Contains("X − A X B = C needs ρ(A)ρ(B) < 1") && Catch::Contains("1.2 · 0.9"));
}
