#include "matmem/models/capacity/capacity.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xcomplex.hpp>
#include <xtensor/xmanipulation.hpp>

#include "matmem/models/capacity/stein.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem::capacity {

using detail::CMat;
using detail::cplx;
using detail::RMat;
using detail::Schur;

Matrix Matrix::identity(std::size_t n) {
  Matrix m(n, n);
  for (std::size_t i = 0; i < n; ++i) m(i, i) = 1.0;
  return m;
}

Matrix transpose(const Matrix& m) {
  Matrix t(m.cols, m.rows);
  for (std::size_t i = 0; i < m.rows; ++i)
    for (std::size_t j = 0; j < m.cols; ++j) t(j, i) = m(i, j);
  return t;
}

Matrix multiply(const Matrix& a, const Matrix& b) {
  if (a.cols != b.rows)
    throw Error(fmt::format("capacity: cannot multiply {}×{} by {}×{}", a.rows, a.cols, b.rows, b.cols));
  return detail::from_xt(detail::matmul(detail::to_xt(a), detail::to_xt(b)));
}

double frobenius_squared(const Matrix& m) {
  double s = 0;
  for (double x : m.data) s += x * x;
  return s;
}

std::vector<double> MemoryCurve::running_sum() const {
  std::vector<double> s(j.size());
  double acc = 0;
  for (std::size_t i = 0; i < j.size(); ++i) s[i] = acc += j[i];
  return s;
}

void check(const MatrixNet& net) {
  const std::size_t r = net.w.rows, c = net.w.cols;
  if (r == 0 || c == 0) throw Error("capacity: W is empty");
  if (net.u.rows != r || net.u.cols != r || net.v.rows != c || net.v.cols != c)
    throw Error(fmt::format("capacity: X(n) = Uᵀ X(n−1) V + W s(n) with W {}×{} needs U {}×{} and V {}×{}, got U {}×{} "
                            "and V {}×{}",
                            r, c, r, r, c, c, net.u.rows, net.u.cols, net.v.rows, net.v.cols));
  if (!(net.noise.eps1 > 0) || !(net.noise.eps2 > 0))
    throw Error(fmt::format("capacity: noise variances must be positive, got ε₁ = {}, ε₂ = {}", net.noise.eps1,
                            net.noise.eps2));
}

double spectral_radius(const Matrix& m) { return detail::schur(detail::to_xt(m)).spectral_radius(); }

bool is_normal(const Matrix& m, double tol) {
  const RMat a = detail::to_xt(m);
  const RMat at = xt::transpose(a);
  const RMat comm = detail::matmul(a, at) - detail::matmul(at, a);
  const double scale = std::max(1.0, xt::amax(xt::abs(a))() * xt::amax(xt::abs(a))());
  return xt::amax(xt::abs(comm))() <= tol * scale * double(m.rows);
}

VectorNet vectorise(const MatrixNet& net) {
  check(net);
  VectorNet vn;
  vn.a = detail::from_xt(detail::kron(RMat(xt::transpose(detail::to_xt(net.u))), RMat(xt::transpose(detail::to_xt(net.v)))));
  vn.v = net.w.data;  // row-major vec
  vn.eps = net.noise.eps1 * net.noise.eps2;
  return vn;
}

MatrixNet rescaled(const MatrixNet& net, double c) {
  MatrixNet out = net;
  for (double& x : out.u.data) x *= c;
  for (double& x : out.v.data) x /= c;
  return out;
}

namespace {

void require_convergent(const Schur& s, const char* name) {
  if (s.spectral_radius() >= 1.0)
    throw Error(fmt::format("capacity: {} must be convergent (spectral radius < 1) for eq. 49 to have a solution, "
                            "got ρ({}) = {:.6g}",
                            name, name, s.spectral_radius()));
}

// The four N×N Schur forms every matrix-network computation needs.
struct NetSchur {
  Schur u, ut, v, vt;  // of U, Uᵀ, V, Vᵀ
  explicit NetSchur(const MatrixNet& net) {
    const RMat u_ = detail::to_xt(net.u), v_ = detail::to_xt(net.v);
    u = detail::schur(u_);
    ut = detail::schur(RMat(xt::transpose(u_)));
    v = detail::schur(v_);
    vt = detail::schur(RMat(xt::transpose(v_)));
  }
  // A = Uᵀ ⊗ Vᵀ (row-major vec) and Aᵀ = U ⊗ V.
  Schur a() const { return detail::kron(ut, vt); }
  Schur at() const { return detail::kron(u, v); }
};

// Σ_{ab} m_ab g_ab for symmetric m: Tr(m g).
double trace_product(const RMat& m, const RMat& g) { return xt::sum(m * g)(); }

RMat outer(const std::vector<double>& x) {
  RMat o = RMat::from_shape({x.size(), x.size()});
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < x.size(); ++j) o(i, j) = x[i] * x[j];
  return o;
}

// G = Σ_i (A^i w)(A^i w)ᵀ, the solution of G − A G Aᵀ = w wᵀ.
RMat signal_gram(const Schur& a, const Schur& at, const std::vector<double>& w) {
  return detail::solve_stein(a, at, outer(w));
}

double quad(const RMat& m, const std::vector<double>& x) {
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double row = 0;
    for (std::size_t j = 0; j < x.size(); ++j) row += m(i, j) * x[j];
    s += x[i] * row;
  }
  return s;
}

struct Eigen {  // of a normal matrix: m = e diag(lambda) eᴴ, e unitary
  CMat e;
  std::vector<cplx> lambda;
};

Eigen normal_eigen(const Matrix& m, const char* name) {
  if (!is_normal(m)) throw Error(fmt::format("capacity: eqs. 17–18 need a normal {} (UUᵀ = UᵀU); this one is not", name));
  const Schur s = detail::schur(detail::to_xt(m));
  require_convergent(s, name);
  Eigen eg{s.q, {}};
  for (std::size_t i = 0; i < s.size(); ++i) eg.lambda.push_back(s.t(i, i));  // t is diagonal for normal m
  return eg;
}

// |b_jk|² with B = E_Uᴴ W E_V.
RMat projected_input(const Eigen& u, const Eigen& v, const Matrix& w) {
  const CMat b = xt::linalg::dot(xt::linalg::dot(detail::adjoint(u.e), detail::complexify(detail::to_xt(w))), v.e);
  RMat b2 = RMat::from_shape(b.shape());
  for (std::size_t i = 0; i < b.size(); ++i) b2.data()[i] = std::norm(b.data()[i]);
  return b2;
}

// Eq. 17/18 (weight = (1 − |λU|²)(1 − |λV|²)) or the exact curve (weight = 1 − |λU λV|²):
// J(i) = Σ |b_jk|² x_jk^i weight_jk / ε₁ε₂ with x = |λU λV|², J_tot = Σ |b_jk|² weight_jk / (1 − x_jk) / ε₁ε₂.
MemoryCurve normal_curve(const MatrixNet& net, int k_max, bool exact) {
  check(net);
  const Eigen u = normal_eigen(net.u, "U"), v = normal_eigen(net.v, "V");
  const RMat b2 = projected_input(u, v, net.w);
  const double eps = net.noise.eps1 * net.noise.eps2;
  MemoryCurve c;
  c.input_information = frobenius_squared(net.w) / eps;
  c.j.assign(std::size_t(k_max) + 1, 0.0);
  for (std::size_t j = 0; j < u.lambda.size(); ++j)
    for (std::size_t k = 0; k < v.lambda.size(); ++k) {
      const double pu = std::norm(u.lambda[j]), pv = std::norm(v.lambda[k]), x = pu * pv;
      const double weight = exact ? 1.0 - x : (1.0 - pu) * (1.0 - pv);
      double xi = 1.0;
      for (int i = 0; i <= k_max; ++i, xi *= x) c.j[std::size_t(i)] += b2(j, k) * xi * weight / eps;
      c.total += b2(j, k) * weight / (1.0 - x) / eps;
    }
  return c;
}

}  // namespace

Covariances row_column_covariances(const MatrixNet& net) {
  check(net);
  const NetSchur s(net);
  require_convergent(s.u, "U");
  require_convergent(s.v, "V");
  const std::size_t r = net.rows(), c = net.cols();
  const RMat u = detail::to_xt(net.u), v = detail::to_xt(net.v);
  const RMat qpsi = net.noise.eps1 * xt::eye<double>(r), qsigma = net.noise.eps2 * xt::eye<double>(c);
  const RMat psi = detail::solve_stein(s.ut, s.u, qpsi);      // Ψ − Uᵀ Ψ U = ε₁ I
  const RMat sigma = detail::solve_stein(s.vt, s.v, qsigma);  // Σ − Vᵀ Σ V = ε₂ I
  Covariances cov;
  cov.psi = detail::from_xt(psi);
  cov.sigma = detail::from_xt(sigma);
  cov.psi_residual = detail::stein_residual(RMat(xt::transpose(u)), u, qpsi, psi) / xt::amax(xt::abs(psi))();
  cov.sigma_residual = detail::stein_residual(RMat(xt::transpose(v)), v, qsigma, sigma) / xt::amax(xt::abs(sigma))();
  return cov;
}

MemoryCurve fmc_eq12(const MatrixNet& net, int k_max) {
  const Covariances cov = row_column_covariances(net);
  const RMat psi_inv = detail::inverse_spd(detail::to_xt(cov.psi));
  const RMat sigma_inv = detail::inverse_spd(detail::to_xt(cov.sigma));
  const RMat ut = xt::transpose(detail::to_xt(net.u)), v = detail::to_xt(net.v);
  MemoryCurve c;
  c.input_information = frobenius_squared(net.w) / (net.noise.eps1 * net.noise.eps2);
  RMat g = detail::to_xt(net.w);  // U^{iT} W V^i
  for (int i = 0; i <= k_max; ++i) {
    c.j.push_back(trace_product(detail::matmul(detail::matmul(psi_inv, g), sigma_inv), g));  // Tr(Σ⁻¹ Gᵀ Ψ⁻¹ G)
    g = detail::matmul(detail::matmul(ut, g), v);
  }
  const NetSchur s(net);
  c.total = trace_product(detail::kron(psi_inv, sigma_inv), signal_gram(s.a(), s.at(), net.w.data));
  return c;
}

MemoryCurve fmc_exact(const MatrixNet& net, int k_max) {
  check(net);
  const NetSchur s(net);
  const Schur a = s.a(), at = s.at();
  const std::size_t n = net.rows() * net.cols();
  const double eps = net.noise.eps1 * net.noise.eps2;
  const RMat cov = detail::solve_stein(a, at, RMat(eps * xt::eye<double>(n)));  // C − A C Aᵀ = ε₁ε₂ I
  const RMat cov_inv = detail::inverse_spd(cov);
  const RMat ut = xt::transpose(detail::to_xt(net.u)), v = detail::to_xt(net.v);
  MemoryCurve c;
  c.input_information = frobenius_squared(net.w) / eps;
  RMat g = detail::to_xt(net.w);
  for (int i = 0; i <= k_max; ++i) {
    c.j.push_back(quad(cov_inv, std::vector<double>(g.begin(), g.end())));
    g = detail::matmul(detail::matmul(ut, g), v);
  }
  c.total = trace_product(cov_inv, signal_gram(a, at, net.w.data));
  return c;
}

MemoryCurve fmc_vector(const VectorNet& net, int k_max) {
  const std::size_t n = net.v.size();
  if (net.a.rows != n || net.a.cols != n)
    throw Error(fmt::format("capacity: vector network with v of length {} needs A {}×{}, got {}×{}", n, n, n,
                            net.a.rows, net.a.cols));
  if (!(net.eps > 0)) throw Error(fmt::format("capacity: noise variance must be positive, got ε = {}", net.eps));
  const RMat a_ = detail::to_xt(net.a);
  const Schur a = detail::schur(a_), at = detail::schur(RMat(xt::transpose(a_)));
  if (a.spectral_radius() >= 1.0)
    throw Error(fmt::format("capacity: the vector network needs ρ(A) < 1, got {:.6g}", a.spectral_radius()));
  const RMat cov = detail::solve_stein(a, at, RMat(net.eps * xt::eye<double>(n)));  // C − A C Aᵀ = ε I
  const RMat cov_inv = detail::inverse_spd(cov);
  MemoryCurve c;
  double vv = 0;
  for (double x : net.v) vv += x * x;
  c.input_information = vv / net.eps;
  std::vector<double> y = net.v;  // A^i v
  for (int i = 0; i <= k_max; ++i) {
    c.j.push_back(quad(cov_inv, y));
    std::vector<double> next(n, 0.0);
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t k = 0; k < n; ++k) next[r] += a_(r, k) * y[k];
    y = std::move(next);
  }
  c.total = trace_product(cov_inv, signal_gram(a, at, net.v));
  return c;
}

MemoryCurve fmc_normal_eq17(const MatrixNet& net, int k_max) { return normal_curve(net, k_max, false); }
MemoryCurve fmc_normal_exact(const MatrixNet& net, int k_max) { return normal_curve(net, k_max, true); }

}  // namespace matmem::capacity
