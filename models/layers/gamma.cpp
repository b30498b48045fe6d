#include "matmem/models/layers/gamma.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

GammaKind gamma_kind(const std::string& name) {
  if (name == "gamma") return GammaKind::gamma;
  if (name == "laguerre") return GammaKind::laguerre;
  if (name == "gamma2") return GammaKind::gamma2;
  if (name == "delay") return GammaKind::delay;
  throw Error(fmt::format("unknown gamma memory kind '{}' (choose gamma, laguerre, gamma2 or delay)", name));
}

const char* gamma_kind_name(GammaKind k) {
  switch (k) {
    case GammaKind::gamma: return "gamma";
    case GammaKind::laguerre: return "laguerre";
    case GammaKind::gamma2: return "gamma2";
    case GammaKind::delay: return "delay";
  }
  return "?";
}

double gamma_mu_logit(double mu) {
  if (!(mu > 0 && mu < 2)) throw Error(fmt::format("gamma memory: μ must be in (0, 2), got {}", mu));
  return std::log(mu / (2 - mu));  // σ(θ) = μ/2
}

double gamma_nu_logit(double mu, double nu) {
  gamma_mu_logit(mu);
  const double top = 2 / mu - 1;
  if (!(nu > 0 && nu < top))
    throw Error(fmt::format("gamma memory: ν must be in (0, 2/μ − 1) = (0, {}) for μ = {} (stability: μ(1 + ν) < 2), got {}",
                            top, mu, nu));
  const double f = nu / top;  // σ(θ) = ν/(2/μ − 1)
  return std::log(f / (1 - f));
}

GammaMemory::GammaMemory(std::string path, std::string state_prefix, std::int64_t rows, std::int64_t cols,
                         GammaConfig config)
    : path_(std::move(path)), mu_name_(path_ + "/mu"), c_name_(path_ + "/c"), omega_name_(path_ + "/omega"), rows_(rows), cols_(cols),
      config_(config) {
  if (config.taps < 1) throw Error(fmt::format("gamma memory {}: needs at least one tap, got {}", path_, config.taps));
  if (rows < 1 || cols < 1) throw Error(fmt::format("gamma memory {}: taps of size {}x{}", path_, rows, cols));
  gamma_mu_logit(config.mu);
  if (config.kind == GammaKind::gamma2) gamma_nu_logit(config.mu, config.nu);
  for (int k = 0; k <= config.taps; ++k) g_.push_back(fmt::format("{}g{}", state_prefix, k));
  if (config.kind == GammaKind::gamma2)
    for (int k = 1; k <= config.taps; ++k) q_.push_back(fmt::format("{}q{}", state_prefix, k));
}

std::vector<std::pair<std::string, double>> GammaMemory::learned_scalars(const ParameterStore& params) const {
  std::vector<std::pair<std::string, double>> out;
  const std::string mu_logit = path_ + "/mu_logit", nu_logit = path_ + "/nu_logit";
  if (!params.contains(mu_logit)) return out;
  const double mu = 2 / (1 + std::exp(-params.at(mu_logit).value.get(0)));
  out.emplace_back(mu_name_, mu);
  if (params.contains(nu_logit))
    out.emplace_back(path_ + "/nu", (2 / mu - 1) / (1 + std::exp(-params.at(nu_logit).value.get(0))));
  return out;
}

std::vector<StateDecl> GammaMemory::states() const {
  std::vector<StateDecl> d;
  for (const std::string& n : g_) d.push_back({n, parameter(rows_, cols_)});
  for (const std::string& n : q_) d.push_back({n, parameter(rows_, cols_)});
  return d;
}

std::vector<Var> GammaMemory::operator()(Step& s, Var x) const {
  const int K = config_.taps;
  if (config_.kind == GammaKind::delay) {  // X(n−k): each tap the one before it, a step ago; no μ
    std::vector<Var> taps(K + 1);
    taps[0] = x;
    for (int k = 1; k <= K; ++k) taps[k] = s.state(g_[k - 1]);
    for (int k = 0; k <= K; ++k) s.next(g_[k], taps[k]);
    return taps;
  }
  Var theta = s.parameter(path_, "", "mu_logit", parameter(1, 1), Init::Constant(gamma_mu_logit(config_.mu)));
  Var mu = scale(sigmoid(theta), 2.0);
  Var a = one_minus(mu);
  if (s.observed()) s.expose(mu_name_, mu);
  std::vector<Var> prev(K + 1), taps(K + 1);
  for (int k = 0; k <= K; ++k) prev[k] = s.state(g_[k]);
  taps[0] = x;
  // c = √(1 − a²) = √(μ(2 − μ)) = 2 √(σ(θ)(1 − σ(θ))) = 2 e^{−(softplus(−θ) + softplus(θ))/2}: Laguerre's gain,
  // and Gamma II's bound on ω.
  Var c;
  if (config_.kind != GammaKind::gamma) c = scale(exp(scale(add(softplus(theta), softplus(scale(theta, -1.0))), -0.5)), 2.0);
  switch (config_.kind) {
    case GammaKind::gamma:
      // (1 − μ) G_k(n−1) + μ G_{k−1}(n−1): at μ = 1 the first product is exactly 0, a delay line bit for bit.
      for (int k = 1; k <= K; ++k) taps[k] = add(hadamard(a, prev[k]), hadamard(mu, prev[k - 1]));
      break;
    case GammaKind::laguerre:
      taps[1] = add(hadamard(a, prev[1]), hadamard(c, prev[0]));
      for (int k = 2; k <= K; ++k) taps[k] = sub(add(hadamard(a, prev[k]), prev[k - 1]), hadamard(a, taps[k - 1]));
      break;
    case GammaKind::gamma2: {
      Var theta_nu = s.parameter(path_, "", "nu_logit", parameter(1, 1),
                                 Init::Constant(gamma_nu_logit(config_.mu, config_.nu)));
      // ω = μ√ν = √(μ(2 − μ)) √σ(θ_ν) = c e^{−softplus(−θ_ν)/2} < c, so a² + ω² < a² + c² = 1.
      Var omega = hadamard(c, exp(scale(softplus(scale(theta_nu, -1.0)), -0.5)));
      Var minus_omega = scale(omega, -1.0);
      if (s.observed()) s.expose(c_name_, c), s.expose(omega_name_, omega);
      for (int k = 1; k <= K; ++k) {
        Var q_prev = s.state(q_[k - 1]);
        taps[k] = add(add(hadamard(a, prev[k]), hadamard(minus_omega, q_prev)), hadamard(mu, prev[k - 1]));
        s.next(q_[k - 1], add(hadamard(omega, prev[k]), hadamard(a, q_prev)));
      }
      break;
    }
    case GammaKind::delay:  // returned above
      break;
  }
  for (int k = 0; k <= K; ++k) s.next(g_[k], taps[k]);
  return taps;
}

}  // namespace matmem
