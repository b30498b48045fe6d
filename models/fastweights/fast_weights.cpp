#include "matmem/models/fastweights/fast_weights.hpp"

#include <cmath>

#include <fmt/format.h>

#include "matmem/ops/fast_weight_matrix.hpp"
#include "matmem/ops/frobenius.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

namespace {
double sigmoid_of(double x) { return 1 / (1 + std::exp(-x)); }
double softplus_of(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
// The name of term i of a map of several: "x", "x1", "x2", …
std::string term_name(const char* base, std::int64_t i) { return i == 0 ? base : fmt::format("{}{}", base, i); }
}  // namespace

FastWeightsRNN::FastWeightsRNN(const FastWeightsConfig& c, DType dtype, std::uint64_t seed, std::string name)
    : Model(name.empty() ? (c.fast ? "fastweights" : "irnn") : name, dtype, seed), config_(c) {
  const std::string& n = this->name();
  if (c.rows < 1 || c.cols < 1) throw Error(fmt::format("model {}: hidden state {}x{}", n, c.rows, c.cols));
  if (config_.input_terms == 0) config_.input_terms = c.rows;
  if (c.input_terms < 0 || c.output_terms < 1)
    throw Error(fmt::format("model {}: fw.input_terms = {} (0: the rows) must be ≥ 0, fw.output_terms = {} ≥ 1", n,
                            c.input_terms, c.output_terms));
  if (c.inner_steps < 1) throw Error(fmt::format("model {}: fw.inner_steps = {} must be ≥ 1", n, c.inner_steps));
  if (c.fast && c.learn_lambda && !(c.lambda > 0 && c.lambda < 1))
    throw Error(fmt::format("model {}: a learned λ = σ(θ) starts in (0, 1), not at fw.lambda = {}", n, c.lambda));
  if (c.fast && c.learn_eta && !(c.eta > 0))
    throw Error(fmt::format("model {}: a learned η = softplus(θ) starts above 0, not at fw.eta = {}", n, c.eta));
  set_io(c.input_rows, c.input_cols, c.output_rows, c.output_cols);
  declare_state({.name = "h", .shape = matrices(1, c.rows, c.cols)});
  slow_ = n + "/slow", ln_ = n + "/ln", out_ = n + "/out", fast_ = n + "/fast";
  for (std::int64_t i = 0; i < config_.input_terms; ++i) input_names_.push_back(term_name("x", i));
  for (std::int64_t i = 0; i < config_.output_terms; ++i) output_names_.push_back(term_name("h", i));
  if (c.fast) {
    // The cost model of fast_weights.hpp ("auto"), per time step, in multiply-adds per sequence, each op also
    // charged a fixed k for the tape's own work (k = 30: fitted to the crossover measured on retrieval, see
    // models/README.md; with k = 0 the rule would stop the matrix form at an n ~3 times too small).
    const double units = double(c.rows * c.cols), S = c.inner_steps, past = (double(c.typical_steps) - 1) / 2;
    const double k = 30, sum_cost = S * past * (2 * units + 3 * k),
                 matrix_cost = S * (2 * units * units + k) + 3 * units * units + 3 * k;
    switch (c.form) {
      case FastWeightsConfig::Form::sum: matrix_ = false; break;
      case FastWeightsConfig::Form::matrix: matrix_ = true; break;
      case FastWeightsConfig::Form::automatic:
        matrix_ = c.typical_steps > 0 && matrix_cost < sum_cost;
        break;
    }
    if (matrix_) declare_state({.name = "A", .shape = matrices(1, c.rows * c.cols, c.rows * c.cols)});
  }
}

std::vector<std::pair<std::string, double>> FastWeightsRNN::learned_scalars() const {
  std::vector<std::pair<std::string, double>> out;
  if (const Parameter* p = params().contains(fast_ + "/lambda_logit") ? &params().at(fast_ + "/lambda_logit") : nullptr)
    out.emplace_back(fast_ + "/lambda", sigmoid_of(p->value.get(0)));
  if (const Parameter* p = params().contains(fast_ + "/eta_raw") ? &params().at(fast_ + "/eta_raw") : nullptr)
    out.emplace_back(fast_ + "/eta", softplus_of(p->value.get(0)));
  return out;
}

Var FastWeightsRNN::slow(Step& s, Var h, Var x) {
  const std::int64_t r = config_.rows, c = config_.cols;
  const Shape xs = x.shape();  // a copy: the parameters' leaves may move the tape's nodes
  input_terms_.clear();
  input_terms_.push_back({h, s.parameter(slow_, "h", "U", matmem::parameter(r, r), Init::Identity(1.0)),
                          s.parameter(slow_, "h", "V", matmem::parameter(c, c), Init::Identity(config_.init_scale))});
  for (const std::string& term : input_names_)
    input_terms_.push_back({x, s.parameter(slow_, term, "U", matmem::parameter(xs.rows, r)),
                            s.parameter(slow_, term, "V", matmem::parameter(xs.cols, c))});
  return mat(std::span<const MatTerm>(input_terms_),
             s.parameter(slow_, "", "B", matmem::parameter(r, c), Init::Constant(0.0)));
}

Var FastWeightsRNN::read(Step& s, Var h) {
  if (config_.output_terms == 1) return s.mat(out_, {{"h", h}}, output_rows(), output_cols());
  output_terms_.clear();
  for (const std::string& n : output_names_) output_terms_.push_back({n, h});
  return s.mat(out_, std::span<const NamedTerm>(output_terms_), output_rows(), output_cols());
}

Var FastWeightsRNN::lambda(Step& s) const {
  const double l = config_.lambda;
  return s.parameter(fast_, "", "lambda_logit", matmem::parameter(1, 1), Init::Constant(std::log(l / (1 - l))));
}

Var FastWeightsRNN::eta(Step& s) const {
  return s.parameter(fast_, "", "eta_raw", matmem::parameter(1, 1), Init::Constant(std::log(std::expm1(config_.eta))));
}

void FastWeightsRNN::coefficients(Step& s, std::int64_t t) {
  coef_.clear();
  if (!config_.learn_lambda && !config_.learn_eta) return;
  // log λ = log σ(θ_λ) = −softplus(−θ_λ); λ^m = exp(m log λ).
  const Var log_lambda = config_.learn_lambda ? scale(softplus(scale(lambda(s), -1.0)), -1.0) : Var();
  const Var e = config_.learn_eta ? softplus(eta(s)) : Var();
  for (std::int64_t k = 0; k < t; ++k) {
    const double m = double(t - 1 - k);
    Var c;
    if (!config_.learn_lambda) c = scale(e, std::pow(config_.lambda, m));
    else {
      const Var power = m == 0 ? Var() : exp(scale(log_lambda, m));
      if (!config_.learn_eta) c = power.valid() ? scale(power, config_.eta) : Var();
      else c = power.valid() ? hadamard(e, power) : e;
    }
    coef_.push_back(c);  // invalid: the constant η (λ⁰ = 1 with λ learned and η fixed)
  }
}

Var FastWeightsRNN::fast(Var h, std::int64_t t) const {
  Var sum;
  const bool learned = config_.learn_lambda || config_.learn_eta;
  for (std::size_t k = 0; k < past_.size(); ++k) {
    const Var dot = frobenius(past_[k], h);
    Var weighted;
    if (learned && coef_[k].valid()) weighted = hadamard(dot, coef_[k]);
    else {
      const double w = learned ? config_.eta : config_.eta * std::pow(config_.lambda, double(t - 1 - std::int64_t(k)));
      weighted = scale(dot, w);
    }
    const Var term = hadamard(past_[k], weighted);
    sum = sum.valid() ? add(sum, term) : term;
  }
  return sum;
}

Var FastWeightsRNN::norm(Step& s, Var z) const {
  const Shape p = matmem::parameter(config_.rows, config_.cols);
  return add(hadamard(layer_norm(z, config_.norm_rows ? LayerNormOver::rows : LayerNormOver::matrix),
                     s.parameter(ln_, "", "G", p, Init::Constant(1.0))),
             s.parameter(ln_, "", "B", p, Init::Constant(0.0)));
}

void FastWeightsRNN::step(Step& s) {
  if (s.time() == 0) past_.clear();
  const Var z = slow(s, s.state("h"), s.input());
  Var h = relu(z);
  if (config_.fast) {
    using Norm = FastWeightsConfig::Norm;
    const std::int64_t t = s.time();
    const Var z_norm = config_.norm == Norm::slow ? norm(s, z) : z;
    // The fast term's inputs: the past states and their coefficients ("sum"), or A_{t−1} ("matrix", zero at t = 0).
    Var A;
    if (matrix_) A = s.state("A");
    else coefficients(s, t);
    for (int k = 0; k < config_.inner_steps; ++k) {
      const Var a = matrix_ ? (t > 0 ? vec_matvec(A, h) : Var()) : fast(h, t);
      if (config_.norm == Norm::slow) h = relu(a.valid() ? add(z_norm, a) : z_norm);
      else {
        const Var pre = a.valid() ? add(z, a) : z;
        h = relu(config_.norm == Norm::sum ? norm(s, pre) : pre);
      }
    }
    if (matrix_) {  // A_t = λ A_{t−1} + η vec(H_t) vec(H_t)ᵀ
      const Var outer = vec_outer(h, h);
      const Var added = config_.learn_eta ? hadamard(outer, softplus(eta(s))) : scale(outer, config_.eta);
      // λ's parameter is made at t = 0 too, where A_{−1} = 0 does not need it (Model::build runs step 0 only).
      const Var lam = config_.learn_lambda ? sigmoid(lambda(s)) : Var();
      Var decayed;
      if (t > 0) decayed = lam.valid() ? hadamard(A, lam) : scale(A, config_.lambda);
      s.next("A", decayed.valid() ? add(decayed, added) : added);
    } else {
      past_.push_back(h);
    }
  }
  s.next("h", h);
  if (s.output_needed()) s.output(read(s, h));
}

}  // namespace matmem
