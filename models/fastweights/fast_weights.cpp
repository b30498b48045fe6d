#include "models/fastweights/fast_weights.hpp"

#include <cmath>

#include <fmt/format.h>

#include "ops/frobenius.hpp"
#include "runtime/error.hpp"

namespace matmem {

FastWeightsRNN::FastWeightsRNN(const FastWeightsConfig& c, DType dtype, std::uint64_t seed, std::string name)
    : Model(name.empty() ? (c.fast ? "fastweights" : "irnn") : name, dtype, seed), config_(c) {
  const std::string& n = this->name();
  if (c.rows < 1 || c.cols < 1) throw Error(fmt::format("model {}: hidden state {}x{}", n, c.rows, c.cols));
  if (c.inner_steps < 1) throw Error(fmt::format("model {}: fw.inner_steps = {} must be ≥ 1", n, c.inner_steps));
  set_io(c.input_rows, c.input_cols, c.output_rows, c.output_cols);
  declare_state({.name = "h", .shape = matrices(1, c.rows, c.cols)});
  slow_ = n + "/slow", ln_ = n + "/ln", out_ = n + "/out";
}

Var FastWeightsRNN::slow(Step& s, Var h, Var x) const {
  const std::int64_t r = config_.rows, c = config_.cols;
  const Shape& xs = x.shape();
  const MatTerm terms[2] = {
      {h, s.parameter(slow_, "h", "U", matmem::parameter(r, r), Init::Identity(1.0)),
       s.parameter(slow_, "h", "V", matmem::parameter(c, c), Init::Identity(config_.init_scale))},
      {x, s.parameter(slow_, "x", "U", matmem::parameter(xs.rows, r)),
       s.parameter(slow_, "x", "V", matmem::parameter(xs.cols, c))}};
  return mat(std::span<const MatTerm>(terms, 2),
             s.parameter(slow_, "", "B", matmem::parameter(r, c), Init::Constant(0.0)));
}

Var FastWeightsRNN::fast(Var h, std::int64_t t) const {
  Var sum;
  for (std::size_t k = 0; k < past_.size(); ++k) {
    const double weight = config_.eta * std::pow(config_.lambda, double(t - 1 - std::int64_t(k)));
    const Var term = hadamard(past_[k], scale(frobenius(past_[k], h), weight));
    sum = sum.valid() ? add(sum, term) : term;
  }
  return sum;
}

Var FastWeightsRNN::norm(Step& s, Var z) const {
  const Shape p = matmem::parameter(config_.rows, config_.cols);
  return add(hadamard(layer_norm(z, LayerNormOver::matrix), s.parameter(ln_, "", "G", p, Init::Constant(1.0))),
             s.parameter(ln_, "", "B", p, Init::Constant(0.0)));
}

void FastWeightsRNN::step(Step& s) {
  if (s.time() == 0) past_.clear();
  const Var z = slow(s, s.state("h"), s.input());
  Var h = relu(z);
  if (config_.fast) {
    using Norm = FastWeightsConfig::Norm;
    const Var z_norm = config_.norm == Norm::slow ? norm(s, z) : z;
    for (int k = 0; k < config_.inner_steps; ++k) {
      const Var a = fast(h, s.time());
      if (config_.norm == Norm::slow) h = relu(a.valid() ? add(z_norm, a) : z_norm);
      else {
        const Var pre = a.valid() ? add(z, a) : z;
        h = relu(config_.norm == Norm::sum ? norm(s, pre) : pre);
      }
    }
    past_.push_back(h);
  }
  s.next("h", h);
  if (s.output_needed()) s.output(s.mat(out_, {{"h", h}}, output_rows(), output_cols()));
}

}  // namespace matmem
