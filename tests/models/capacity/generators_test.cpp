// Tests for models/capacity/generators.*: the random connectivities are what they claim to be.
#include <catch2/catch.hpp>

#include <cmath>
#include <complex>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>

#include "matmem/models/capacity/generators.hpp"
#include "matmem/models/capacity/stein.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using namespace matmem::capacity;
using detail::RMat;

TEST_CASE("random_orthogonal is orthogonal", "[capacity][generators]") {
  Rng rng(1);
  for (std::size_t n : {1, 2, 7}) {
    const RMat o = detail::to_xt(random_orthogonal(n, rng));
    const RMat oto = detail::matmul(RMat(xt::transpose(o)), o);
    CHECK(xt::amax(xt::abs(oto - xt::eye<double>(n)))() < 1e-12);
  }
}

TEST_CASE("random_normal_convergent is normal with eigenvalue moduli between rho_min and rho_max", "[capacity][generators]") {
  Rng rng(2);
  for (std::size_t n : {1, 2, 5, 8}) {
    const Matrix u = random_normal_convergent(n, rng, 0.9, 0.4);
    CHECK(is_normal(u));
    const auto lambda = xt::linalg::eigvals(detail::to_xt(u));
    for (const auto& l : lambda) {
      CHECK(std::abs(l) >= 0.4 - 1e-10);
      CHECK(std::abs(l) <= 0.9 + 1e-10);
    }
  }
}

TEST_CASE("random_nonnormal is convergent and far from normal", "[capacity][generators]") {
  Rng rng(3);
  const Matrix u = random_nonnormal(6, rng, 0.8, 3.0);
  CHECK(spectral_radius(u) < 0.8);
  CHECK_FALSE(is_normal(u, 1e-3));
}

TEST_CASE("random_input has Tr(WᵀW) = 1 and a seed fixes the instance", "[capacity][generators]") {
  Rng a(4), b(4), c(5);
  const Matrix w = random_input(3, 5, a);
  CHECK(frobenius_squared(w) == Approx(1.0).epsilon(1e-14));
  CHECK(w.data == random_input(3, 5, b).data);
  CHECK(w.data != random_input(3, 5, c).data);
}

TEST_CASE("generators reject eigenvalue moduli outside 0 ≤ ρ < 1", "[capacity][generators]") {
  Rng rng(6);
  CHECK_THROWS_WITH(random_normal_convergent(3, rng, 1.0),
                    Catch::Contains("eigenvalue moduli need 0 ≤ rho_min ≤ rho_max < 1") && Catch::Contains(", 1]"));
  CHECK_THROWS_WITH(random_nonnormal(3, rng, 1.5), Catch::Contains("eigenvalue moduli") && Catch::Contains("[0, 1.5]"));
  CHECK_THROWS_WITH(connectivity_from_name("orthogonal"),
                    Catch::Contains("unknown connectivity 'orthogonal'") && Catch::Contains("normal or nonnormal"));
}
