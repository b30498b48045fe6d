// The gamma family of linear memories over matrices (003 §3–4; de Vries & Principe 1992), written from
// existing ops as a layer with recurrent states. The input X(n) is a matrix [B,r,c]; the layer returns the
// K + 1 taps T_0(n) = X(n), T_1(n), …, T_K(n), each [B,r,c], for the layers that read them.
//
// gamma (Gamma I):  G_0(n) = X(n),  G_k(n) = (1 − μ) G_k(n−1) + μ G_{k−1}(n−1),  k = 1..K
//   Each section is the kernel g(n) = μ (1 − μ)^{n−1} (n ≥ 1), the delay operator μ/(z − (1 − μ)); the
//   impulse response of tap k is g_k(n) = C(n−1, k−1) μ^k (1−μ)^{n−k}, with memory depth D = K/μ and
//   resolution R = μ. μ = 1: the tap delay line, G_k(n) = X(n−k) exactly. K = 1: the context unit.
//   Stable for 0 < μ < 2 (the pole 1 − μ inside the unit circle).
// laguerre: an orthonormal basis of the same space, a low-pass section then all-pass sections (003 §4; the
//   Laguerre memory of Silva and Principe), with a = 1 − μ and c = √(1 − a²) = √(μ(2 − μ)):
//     L_0(n) = X(n),  L_1(n) = a L_1(n−1) + c L_0(n−1)                         (c / (z − a))
//     L_k(n) = a L_k(n−1) + L_{k−1}(n−1) − a L_{k−1}(n),  k = 2..K              ((1 − a z) / (z − a))
//   The taps' impulse responses are orthonormal (Σ_n l_j(n) l_k(n) = δ_jk); μ = 1 is again the delay line.
// gamma2 (Gamma II): each section has the pair of poles (1 − μ) ± jμ√ν, the delay operator
//     μ [z − (1 − μ)] / ([z − (1 − μ)]² + ν μ²),
//   computed in the real state-space form of that pole pair, with S_0 = X, a = 1 − μ and ω = μ√ν:
//     S_k(n) = a S_k(n−1) − ω Q_k(n−1) + μ S_{k−1}(n−1),   Q_k(n) = ω S_k(n−1) + a Q_k(n−1),   k = 1..K
//   (eliminating Q_k gives S_k = μ(z − a)/((z − a)² + ω²) · S_{k−1}); the taps are S_k. Stable when the poles'
//   radius² (1 − μ)² + νμ² < 1, i.e. μ(1 + ν) < 2 with 0 < μ < 2, 003's condition; complex poles for ν > 0.
//   ν = 0 is the gamma memory.
// delay: the tap delay line, G_k(n) = G_{k−1}(n−1) = X(n−k): the gamma memory with μ fixed at 1, no parameter
//   (the baseline the learned μ is set against).
//
// Stability by construction, not by clipping. The learned parameters are unconstrained reals:
//   μ = 2 σ(θ_μ) ∈ (0, 2)                        (<path>/mu_logit, [1,1], one μ for the whole layer)
//   ν = (2/μ − 1) σ(θ_ν) ∈ (0, 2/μ − 1)           (<path>/nu_logit, gamma2 only), so μ(1 + ν) < 2
// computed from ops as μ = 2 sigmoid(θ_μ), and c = √(μ(2 − μ)) = 2 e^{−(softplus(θ_μ) + softplus(−θ_μ))/2} and
// ω = μ√ν = c √σ(θ_ν) = c e^{−softplus(−θ_ν)/2} without a square root: 0 < ω < c, so the radius² of the poles,
// (1 − μ)² + ω², is below (1 − μ)² + c² = 1, and μ(1 + ν) = μ + ω²/μ < μ + c²/μ = 2. In exact arithmetic
// every θ gives a stable memory.
// In floating point 2 sigmoid(θ_μ) rounds to 2 (a pole on the unit circle) from θ_μ = 36.74 in float64 and
// 16.64 in float32 (measured in steps of 0.01); the gradient 2σ(1 − σ) of μ there is about 2e-16 (1e-7), so
// θ_μ gets there only by updates that ignore the gradient's size (Adam's can: watch θ_μ in long runs).
//
// States (zero at the start of a sequence): the previous step's taps <prefix>g0 … <prefix>gK and, for gamma2,
// <prefix>q1 … <prefix>qK. A model declares them with declare_state(states()) in its constructor.
#pragma once
#include <string>
#include <vector>

#include "matmem/models/core/model.hpp"

namespace matmem {

enum class GammaKind { gamma, laguerre, gamma2, delay };
// "gamma" | "laguerre" | "gamma2" | "delay", else an Error naming them
GammaKind gamma_kind(const std::string& name);
const char* gamma_kind_name(GammaKind k);

struct GammaConfig {
  GammaKind kind = GammaKind::gamma;
  int taps = 4;     // K ≥ 1
  double mu = 0.5;  // initial μ, in (0, 2)
  double nu = 0.5;  // gamma2: initial ν, in (0, 2/μ − 1)
};

// θ for an initial μ, and for an initial ν given μ (the inverses of the maps above); Errors outside the ranges.
double gamma_mu_logit(double mu);
double gamma_nu_logit(double mu, double nu);

class GammaMemory {
 public:
  // Parameters under `path`; states named `state_prefix` + "g0", …; taps of rows × cols.
  GammaMemory(std::string path, std::string state_prefix, std::int64_t rows, std::int64_t cols, GammaConfig config);
  const GammaConfig& config() const { return config_; }
  std::vector<StateDecl> states() const;

  // One time step: reads the states, sets their next values, returns the taps T_0(n) = x, …, T_K(n).
  // Exposes the values the recurrence uses to an observer: μ as <path>/mu, and for gamma2 c = √(μ(2 − μ)) and
  // ω = μ√ν as <path>/c and <path>/omega (the poles' radius² is (1 − μ)² + ω², below 1 while ω < c).
  std::vector<Var> operator()(Step& s, Var x) const;
  // The learned μ (<path>/mu), and ν (<path>/nu) for gamma2, from their θs in `params`; empty for the delay
  // line or before the parameters exist. A model reports them through Model::learned_scalars.
  std::vector<std::pair<std::string, double>> learned_scalars(const ParameterStore& params) const;

 private:
  std::string path_, mu_name_, c_name_, omega_name_;
  std::int64_t rows_, cols_;
  GammaConfig config_;
  std::vector<std::string> g_, q_;  // state names
};

}  // namespace matmem
