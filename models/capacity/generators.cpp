#include "matmem/models/capacity/generators.hpp"

#include <cmath>
#include <numbers>

#include <fmt/format.h>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>

#include "matmem/models/capacity/stein.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem::capacity {

using detail::RMat;

Connectivity connectivity_from_name(const std::string& name) {
  if (name == "normal") return Connectivity::normal;
  if (name == "nonnormal") return Connectivity::nonnormal;
  throw Error(fmt::format("capacity: unknown connectivity '{}' (choose normal or nonnormal)", name));
}

const char* connectivity_name(Connectivity c) { return c == Connectivity::normal ? "normal" : "nonnormal"; }

namespace {

void check_rho(double rho_min, double rho_max) {
  if (!(rho_min >= 0.0 && rho_min <= rho_max && rho_max < 1.0))
    throw Error(fmt::format("capacity: eigenvalue moduli need 0 ≤ rho_min ≤ rho_max < 1, got [{}, {}]", rho_min, rho_max));
}

// O M Oᵀ
Matrix conjugate_by(const Matrix& o, const Matrix& m) { return multiply(multiply(o, m), transpose(o)); }

}  // namespace

Matrix random_orthogonal(std::size_t n, Rng& rng) {
  RMat g = RMat::from_shape({n, n});
  for (double& x : g) x = rng.normal();
  auto [q, r] = xt::linalg::qr(g);
  RMat o = q;
  for (std::size_t j = 0; j < n; ++j)
    if (r(j, j) < 0)
      for (std::size_t i = 0; i < n; ++i) o(i, j) = -o(i, j);
  return detail::from_xt(o);
}

namespace {

// Block diagonal B with 2×2 blocks ρ[[cos θ, −sin θ], [sin θ, cos θ]] at rows 0, 2, 4, … and, for odd n, a
// last 1×1 block ±ρ.
Matrix rotation_blocks(std::size_t n, Rng& rng, double rho_min, double rho_max) {
  Matrix b(n, n);
  std::size_t i = 0;
  for (; i + 1 < n; i += 2) {
    const double rho = rng.uniform(rho_min, rho_max), theta = rng.uniform(0.0, std::numbers::pi);
    b(i, i) = rho * std::cos(theta);
    b(i, i + 1) = -rho * std::sin(theta);
    b(i + 1, i) = rho * std::sin(theta);
    b(i + 1, i + 1) = rho * std::cos(theta);
  }
  if (i < n) {
    const double rho = rng.uniform(rho_min, rho_max);
    b(i, i) = rng.bernoulli(0.5) ? rho : -rho;
  }
  return b;
}

}  // namespace

Matrix random_normal_convergent(std::size_t n, Rng& rng, double rho_max, double rho_min) {
  check_rho(rho_min, rho_max);
  const Matrix b = rotation_blocks(n, rng, rho_min, rho_max);
  return conjugate_by(random_orthogonal(n, rng), b);
}

Matrix random_nonnormal(std::size_t n, Rng& rng, double rho_max, double strength) {
  check_rho(0.0, rho_max);
  Matrix m = rotation_blocks(n, rng, 0.0, rho_max);
  for (std::size_t i = 0; i + 1 < n; i += 2) {  // skew each 2×2 block: diag(k, 1/k) B diag(1/k, k)
    const double k2 = std::exp(std::tanh(strength) * rng.normal());
    m(i, i + 1) *= k2;
    m(i + 1, i) /= k2;
  }
  const double sd = strength / std::sqrt(double(n));
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t block_end = i % 2 == 0 && i + 1 < n ? i + 2 : i + 1;  // first column right of i's block
    for (std::size_t j = block_end; j < n; ++j) m(i, j) = sd * rng.normal();
  }
  return conjugate_by(random_orthogonal(n, rng), m);
}

Matrix random_input(std::size_t rows, std::size_t cols, Rng& rng) {
  Matrix w(rows, cols);
  for (double& x : w.data) x = rng.normal();
  const double norm = std::sqrt(frobenius_squared(w));
  for (double& x : w.data) x /= norm;
  return w;
}

Matrix random_connectivity(std::size_t n, Connectivity kind, Rng& rng, const GeneratorOptions& opt) {
  return kind == Connectivity::normal ? random_normal_convergent(n, rng, opt.rho_max, opt.rho_min)
                                      : random_nonnormal(n, rng, opt.rho_max, opt.strength);
}

MatrixNet random_matrix_net(std::size_t rows, std::size_t cols, Connectivity kind, Rng& rng, Noise noise,
                            const GeneratorOptions& opt) {
  MatrixNet net;
  net.u = random_connectivity(rows, kind, rng, opt);
  net.v = random_connectivity(cols, kind, rng, opt);
  net.w = random_input(rows, cols, rng);
  net.noise = noise;
  return net;
}

VectorNet random_vector_net(std::size_t n, Connectivity kind, Rng& rng, double eps, const GeneratorOptions& opt) {
  VectorNet net;
  net.a = random_connectivity(n, kind, rng, opt);
  net.v = random_input(n, 1, rng).data;
  net.eps = eps;
  return net;
}

}  // namespace matmem::capacity
