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
  if (config.batch_norm) {
    auto running = [&](const std::string& path) {
      Parameter& mean = params().add(path + "/running_mean", parameter(config.rows, config.cols));
      Parameter& var = params().add(path + "/running_var", parameter(config.rows, config.cols));
      mean.buffer = var.buffer = true;
      var.value.fill(1.0);
      return BatchNormRunning{&mean.value, &var.value, 0.1};
    };
    for (const std::string& path : paths_) enc_running_.push_back(running(path + "/norm"));
    dec_running_.resize(1);
    for (std::size_t l = 1; l < paths_.size(); ++l) dec_running_.push_back(running(paths_[l] + "/dnorm"));
  }
}

namespace {
// G ⊙ BN(z) + D, the gain and shift <path>/G and <path>/D.
Var normalise(Step& s, Var z, const std::string& path, const BatchNormRunning& running) {
  const Shape p = matmem::parameter(z.shape().rows, z.shape().cols);
  return add(hadamard(batch_norm(z, running), s.parameter(path, "", "G", p, Init::Constant(1.0))),
             s.parameter(path, "", "D", p, Init::Constant(0.0)));
}
}  // namespace

void MatAutoencoder::step(Step& s) {
  const AutoencoderConfig& c = config_;
  const std::size_t K = paths_.size();
  // Encoder; the shape into layer l is r_{l−1} × c_{l−1}.
  Var h = s.input();
  for (std::size_t l = 0; l < K; ++l) {
    const std::int64_t r0 = l == 0 ? c.input_rows : c.rows, c0 = l == 0 ? c.input_cols : c.cols;
    // Batch norm cancels a 1×1 U_l (l ≥ 2) in both its layers: a constant 1 instead.
    u_[l] = c.batch_norm && l > 0 && c.rows == 1 ? s.tape().constant(matmem::parameter(1, 1), 1.0)
                                                 : s.parameter(paths_[l], "h", "U", matmem::parameter(r0, c.rows));
    v_[l] = s.parameter(paths_[l], "h", "V", matmem::parameter(c0, c.cols));
    if (c.batch_norm) {
      h = activate(c.activation, normalise(s, bilinear(h, u_[l], v_[l]), paths_[l] + "/norm", enc_running_[l]));
    } else {
      Var b = s.parameter(paths_[l], "", "B", matmem::parameter(c.rows, c.cols), Init::Constant(0.0));
      h = activate(c.activation, add(bilinear(h, u_[l], v_[l]), b));
    }
  }
  // Decoder, through the same maps transposed.
  Var g = h;
  for (std::size_t l = K; l-- > 0;) {
    const std::int64_t r0 = l == 0 ? c.input_rows : c.rows, c0 = l == 0 ? c.input_cols : c.cols;
    const Var map = bilinear(g, transpose(u_[l]), transpose(v_[l]));
    if (c.batch_norm && l > 0) {
      g = activate(c.activation, normalise(s, map, paths_[l] + "/dnorm", dec_running_[l]));
      continue;
    }
    Var bias = s.parameter(paths_[l], "", "C", matmem::parameter(r0, c0), Init::Constant(0.0));
    Var z = add(map, bias);
    g = l == 0 ? sigmoid(z) : activate(c.activation, z);
  }
  s.output(g);
}

}  // namespace matmem
