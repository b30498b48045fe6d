#include "matmem/models/ffn/autoencoder.hpp"

#include <fmt/format.h>

#include "matmem/ops/transpose.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

MatAutoencoder::MatAutoencoder(const AutoencoderConfig& config, DType dtype, std::uint64_t seed, std::string name)
    : Model(name, dtype, seed), config_(config) {
  if (config.encoder_layers < 1)
    throw Error(fmt::format("model {}: {} encoder layers (needs at least one)", name, config.encoder_layers));
  if (config.rows < 1 || config.cols < 1)
    throw Error(fmt::format("model {}: hidden shape {}x{}", name, config.rows, config.cols));
  set_io(config.input_rows, config.input_cols, config.input_rows, config.input_cols);
  for (std::int64_t l = 1; l <= config.encoder_layers; ++l) paths_.push_back(fmt::format("{}/l{}", name, l));
  u_.resize(paths_.size());
  v_.resize(paths_.size());
}

void MatAutoencoder::step(Step& s) {
  const AutoencoderConfig& c = config_;
  const std::size_t K = paths_.size();
  // Encoder; the shape into layer l is r_{l−1} × c_{l−1}.
  Var h = s.input();
  for (std::size_t l = 0; l < K; ++l) {
    const std::int64_t r0 = l == 0 ? c.input_rows : c.rows, c0 = l == 0 ? c.input_cols : c.cols;
    u_[l] = s.parameter(paths_[l], "h", "U", matmem::parameter(r0, c.rows));
    v_[l] = s.parameter(paths_[l], "h", "V", matmem::parameter(c0, c.cols));
    Var b = s.parameter(paths_[l], "", "B", matmem::parameter(c.rows, c.cols), Init::Constant(0.0));
    h = activate(c.activation, add(bilinear(h, u_[l], v_[l]), b));
  }
  // Decoder, through the same maps transposed.
  Var g = h;
  for (std::size_t l = K; l-- > 0;) {
    const std::int64_t r0 = l == 0 ? c.input_rows : c.rows, c0 = l == 0 ? c.input_cols : c.cols;
    Var bias = s.parameter(paths_[l], "", "C", matmem::parameter(r0, c0), Init::Constant(0.0));
    Var z = add(bilinear(g, transpose(u_[l]), transpose(v_[l])), bias);
    g = l == 0 ? sigmoid(z) : activate(c.activation, z);
  }
  s.output(g);
}

}  // namespace matmem
