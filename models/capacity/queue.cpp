#include "matmem/models/capacity/queue.hpp"

#include <algorithm>
#include <cmath>
#include <complex>

#include <fmt/format.h>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "matmem/models/capacity/stein.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem::capacity {

using detail::CMat;
using detail::cplx;
using detail::RMat;
using detail::Schur;

namespace {

constexpr int kMaxDepth = 1000000;

void check_depth(int depth) {
  if (depth < 0 || depth > kMaxDepth)
    throw Error(fmt::format("capacity: queue truncation depth must be in [0, {}], got {}", kMaxDepth, depth));
}

double condition_spd(const RMat& a) {
  const auto w = xt::linalg::eigvalsh(a);
  const double lo = xt::amin(w)(), hi = xt::amax(w)();
  return lo > 0 ? hi / lo : INFINITY;
}

struct QueueSeries {
  RMat psi, sigma, g;  // Ψ_D, Σ_D, Ĝ_D
};

QueueSeries series(const MatrixNet& net, int depth, const Schur& u, const Schur& ut, const Schur& v,
                   const Schur& vt) {
  const std::size_t r = net.rows(), c = net.cols();
  RMat p = detail::solve_stein(ut, u, RMat(xt::eye<double>(r)));  // P_0
  RMat s = detail::solve_stein(vt, v, RMat(xt::eye<double>(c)));  // S_0
  RMat g = detail::to_xt(net.w);                                   // G_0
  QueueSeries q{p, s, g};
  for (int m = 1; m <= depth; ++m) {
    p = detail::solve_stein(ut, u, p);
    s = detail::solve_stein(vt, v, s);
    g = detail::solve_stein(ut, v, g);  // G_m − Uᵀ G_m V = G_{m−1}
    q.psi += p;
    q.sigma += s;
    q.g += g;
  }
  q.psi *= net.noise.eps1;
  q.sigma *= net.noise.eps2;
  return q;
}

// log Σ_{m=0}^{D} q^m for real q > 0, and log|Σ_{m=0}^{D} q^m| for complex q.
double log_abs_geometric(cplx q, int depth) {
  const double n = double(depth) + 1;
  if (std::abs(q - cplx(1)) < 1e-3) {  // no cancellation-prone closed form near q = 1: sum directly
    cplx sum = 0, term = 1;
    for (int m = 0; m <= depth; ++m, term *= q) sum += term;
    return std::log(std::abs(sum));
  }
  const double lq = std::log(std::abs(q));
  if (lq > 0) {  // |q| > 1: (q^{D+1} − 1)/(q − 1) = q^{D+1} (1 − q^{−(D+1)})/(q − 1)
    const cplx tail = std::exp(-n * std::log(q));
    return n * lq + std::log(std::abs(cplx(1) - tail)) - std::log(std::abs(q - cplx(1)));
  }
  const cplx head = std::exp(n * std::log(q));  // |q| ≤ 1
  return std::log(std::abs(cplx(1) - head)) - std::log(std::abs(cplx(1) - q));
}

struct NormalEigen {
  CMat e;
  std::vector<cplx> lambda;
};

NormalEigen normal_eigen(const Matrix& m, const char* name) {
  if (!is_normal(m)) throw Error(fmt::format("capacity: the normal queue formula needs a normal {}", name));
  const Schur s = detail::schur(detail::to_xt(m));
  if (s.spectral_radius() >= 1.0)
    throw Error(fmt::format("capacity: {} must be convergent for eq. 40, got ρ = {:.6g}", name, s.spectral_radius()));
  NormalEigen eg{s.q, {}};
  for (std::size_t i = 0; i < s.size(); ++i) eg.lambda.push_back(s.t(i, i));
  return eg;
}

}  // namespace

QueueCurve fmc_queue_eq41(const MatrixNet& net, int k_max, int depth) {
  check(net);
  check_depth(depth);
  const RMat u_ = detail::to_xt(net.u), v_ = detail::to_xt(net.v);
  const Schur u = detail::schur(u_), ut = detail::schur(RMat(xt::transpose(u_)));
  const Schur v = detail::schur(v_), vt = detail::schur(RMat(xt::transpose(v_)));
  if (u.spectral_radius() >= 1.0 || v.spectral_radius() >= 1.0)
    throw Error(fmt::format("capacity: eq. 40 needs convergent U and V, got ρ(U) = {:.6g}, ρ(V) = {:.6g}",
                            u.spectral_radius(), v.spectral_radius()));
  const QueueSeries q = series(net, depth, u, ut, v, vt);
  const RMat psi_inv = detail::inverse_spd(q.psi), sigma_inv = detail::inverse_spd(q.sigma);
  QueueCurve out;
  out.depth = depth;
  out.psi_condition = condition_spd(q.psi);
  out.sigma_condition = condition_spd(q.sigma);
  out.curve.input_information = frobenius_squared(net.w) / (net.noise.eps1 * net.noise.eps2);
  RMat g = q.g;
  for (int k = 0; k <= k_max; ++k) {
    out.curve.j.push_back(xt::sum(detail::matmul(detail::matmul(psi_inv, g), sigma_inv) * g)());
    g = detail::matmul(detail::matmul(RMat(xt::transpose(u_)), g), v_);
  }
  // J'_tot = Tr((Ψ⁻¹ ⊗ Σ⁻¹) Γ), Γ − A Γ Aᵀ = ĝ ĝᵀ, A = Uᵀ ⊗ Vᵀ.
  const std::vector<double> ghat(q.g.begin(), q.g.end());
  RMat outer = RMat::from_shape({ghat.size(), ghat.size()});
  for (std::size_t i = 0; i < ghat.size(); ++i)
    for (std::size_t j = 0; j < ghat.size(); ++j) outer(i, j) = ghat[i] * ghat[j];
  const RMat gram = detail::solve_stein(detail::kron(ut, vt), detail::kron(u, v), outer);
  out.curve.total = xt::sum(detail::kron(psi_inv, sigma_inv) * gram)();
  return out;
}

QueueCurve fmc_queue_normal(const MatrixNet& net, int k_max, int depth) {
  check(net);
  check_depth(depth);
  const NormalEigen u = normal_eigen(net.u, "U"), v = normal_eigen(net.v, "V");
  const CMat b = xt::linalg::dot(xt::linalg::dot(detail::adjoint(u.e), detail::complexify(detail::to_xt(net.w))), v.e);
  const double log_eps = std::log(net.noise.eps1 * net.noise.eps2);
  auto log_precision_sum = [&](cplx lambda) {  // log Σ_{m=0}^{D} (1 − |λ|²)^{−(m+1)}
    const double a = 1.0 / (1.0 - std::norm(lambda));
    return std::log(a) + log_abs_geometric(cplx(a), depth);
  };
  std::vector<double> log_psi, log_sigma;
  for (cplx l : u.lambda) log_psi.push_back(log_precision_sum(l));
  for (cplx l : v.lambda) log_sigma.push_back(log_precision_sum(l));
  QueueCurve out;
  out.depth = depth;
  out.curve.input_information = frobenius_squared(net.w) / (net.noise.eps1 * net.noise.eps2);
  out.curve.j.assign(std::size_t(k_max) + 1, 0.0);
  for (std::size_t j = 0; j < u.lambda.size(); ++j)
    for (std::size_t k = 0; k < v.lambda.size(); ++k) {
      const double b2 = std::norm(b(j, k));
      if (b2 == 0) continue;
      const cplx x = std::conj(u.lambda[j]) * v.lambda[k];
      const double ax2 = std::norm(x);
      const double log_g2 = std::log(b2) + 2.0 * log_abs_geometric(cplx(1) / (cplx(1) - x), depth);
      const double base = log_g2 - log_psi[j] - log_sigma[k] - log_eps;
      const double log_ax2 = ax2 > 0 ? std::log(ax2) : -INFINITY;
      for (int i = 0; i <= k_max; ++i)
        out.curve.j[std::size_t(i)] += i == 0 ? std::exp(base) : std::exp(base + double(i) * log_ax2);
      out.curve.total += std::exp(base - std::log1p(-ax2));
    }
  return out;
}

QueueCurve fmc_queue(const MatrixNet& net, int k_max, int depth) {
  return is_normal(net.u) && is_normal(net.v) ? fmc_queue_normal(net, k_max, depth) : fmc_queue_eq41(net, k_max, depth);
}

double fmc_queue_eq46(const MatrixNet& net, int k, int depth) {
  check(net);
  if (depth < 1) throw Error("capacity: eq. 46 needs depth ≥ 1 (Σ_MEM and Ψ_MEM must be invertible)");
  const RMat u_ = detail::to_xt(net.u), v_ = detail::to_xt(net.v);
  const Schur u = detail::schur(u_), ut = detail::schur(RMat(xt::transpose(u_)));
  const Schur v = detail::schur(v_), vt = detail::schur(RMat(xt::transpose(v_)));
  const std::size_t r = net.rows(), c = net.cols();
  // STATE parts (m = 0) and MEM parts (m = 1..D), without the ε factors as in eq. 40's braces.
  const QueueSeries all = series(net, depth, u, ut, v, vt);
  const QueueSeries state = series(net, 0, u, ut, v, vt);
  const RMat psi_state = state.psi / net.noise.eps1, sigma_state = state.sigma / net.noise.eps2;
  const RMat psi_mem = all.psi / net.noise.eps1 - psi_state, sigma_mem = all.sigma / net.noise.eps2 - sigma_state;
  const RMat psi_state_inv = detail::inverse_spd(psi_state), sigma_state_inv = detail::inverse_spd(sigma_state);
  const RMat psi_mem_inv = detail::inverse_spd(psi_mem), sigma_mem_inv = detail::inverse_spd(sigma_mem);
  // Eq. 47: Σ_MF⁻¹ = I − Σ_STATE⁻¹ (Σ_MEM⁻¹ + Σ_STATE⁻¹)⁻¹, likewise Ψ_MF⁻¹.
  const RMat sigma_mf = RMat(xt::eye<double>(c)) - detail::matmul(sigma_state_inv, xt::linalg::inv(RMat(sigma_mem_inv + sigma_state_inv)));
  const RMat psi_mf = RMat(xt::eye<double>(r)) - detail::matmul(psi_state_inv, xt::linalg::inv(RMat(psi_mem_inv + psi_state_inv)));
  // ∂M = U^{kT} Ĝ V^k, ∂M_STATE = U^{kT} W V^k, ∂M_MEM = ∂M − ∂M_STATE.
  RMat dm = all.g, dm_state = detail::to_xt(net.w);
  const RMat ut_ = xt::transpose(u_);
  for (int i = 0; i < k; ++i) {
    dm = detail::matmul(detail::matmul(ut_, dm), v_);
    dm_state = detail::matmul(detail::matmul(ut_, dm_state), v_);
  }
  const RMat dm_mem = dm - dm_state;
  const RMat sig = detail::matmul(sigma_mf, sigma_state_inv) / net.noise.eps2;  // Σ_MF⁻¹ Σ_STATE⁻¹ (with ε₂)
  const RMat psi = detail::matmul(psi_mf, psi_state_inv) / net.noise.eps1;
  auto tr = [&](const RMat& a, const RMat& b) {  // Tr(sig aᵀ psi b) = Σ_ij (sig aᵀ)_ji (psi b)_ij
    return xt::sum(xt::transpose(detail::matmul(sig, RMat(xt::transpose(a)))) * detail::matmul(psi, b))();
  };
  return tr(dm_mem, dm) + tr(dm, dm_state);
}

std::vector<double> queue_total_by_depth(const MatrixNet& net, const std::vector<int>& depths) {
  std::vector<double> totals;
  const bool normal = is_normal(net.u) && is_normal(net.v);
  for (int d : depths) totals.push_back((normal ? fmc_queue_normal(net, 0, d) : fmc_queue_eq41(net, 0, d)).curve.total);
  return totals;
}

HorizonCurve fmc_horizon(const MatrixNet& net, int horizon, bool with_queue) {
  check(net);
  const std::size_t n = net.rows() * net.cols();
  if (horizon < 1) throw Error(fmt::format("capacity: horizon must be ≥ 1, got {}", horizon));
  if (n > 1024) throw Error(fmt::format("capacity: the finite-horizon curve is dense in r·c = {} > 1024 neurons", n));
  const RMat a = detail::to_xt(vectorise(net).a);
  const RMat w = xt::reshape_view(detail::to_xt(net.w), {n, std::size_t(1)});
  RMat prev = xt::zeros<double>({n, n}), h = xt::eye<double>(n);  // H_{k−1}, H_k
  RMat cov = xt::zeros<double>({n, n});
  std::vector<RMat> signal;  // H_k w
  for (int k = 0; k < horizon; ++k) {
    cov += detail::matmul(h, RMat(xt::transpose(h)));
    signal.push_back(detail::matmul(h, w));
    RMat next = detail::matmul(a, h);
    if (with_queue) next += prev;
    prev = std::move(h);
    h = std::move(next);
  }
  cov *= net.noise.eps1 * net.noise.eps2;
  HorizonCurve out;
  out.horizon = horizon;
  out.condition = condition_spd(cov);
  out.curve.input_information = frobenius_squared(net.w) / (net.noise.eps1 * net.noise.eps2);
  RMat ys = RMat::from_shape({n, std::size_t(horizon)});
  for (int k = 0; k < horizon; ++k) xt::view(ys, xt::all(), k) = xt::view(signal[std::size_t(k)], xt::all(), 0);
  const RMat x = xt::linalg::solve(cov, ys);  // C_n⁻¹ [y_0 … y_{n−1}]
  for (int k = 0; k < horizon; ++k) {
    out.curve.j.push_back(xt::sum(xt::view(ys, xt::all(), k) * xt::view(x, xt::all(), k))());
    out.curve.total += out.curve.j.back();
  }
  return out;
}

double queue_spectral_radius(const MatrixNet& net) {
  check(net);
  const Schur u = detail::schur(detail::to_xt(net.u)), v = detail::schur(detail::to_xt(net.v));
  double rho = 0;
  for (std::size_t j = 0; j < u.size(); ++j)
    for (std::size_t k = 0; k < v.size(); ++k) {
      const cplx lambda = u.t(j, j) * v.t(k, k);
      const cplx root = std::sqrt(lambda * lambda + cplx(4));
      rho = std::max({rho, std::abs((lambda + root) / 2.0), std::abs((lambda - root) / 2.0)});
    }
  return rho;
}

Matrix queue_companion(const MatrixNet& net) {
  const VectorNet vn = vectorise(net);
  const std::size_t n = vn.v.size();
  Matrix m(2 * n, 2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) m(i, j) = vn.a(i, j);
    m(i, n + i) = 1.0;  // + x(n−2)
    m(n + i, i) = 1.0;  // shift x(n−1) into the second block
  }
  return m;
}

}  // namespace matmem::capacity
