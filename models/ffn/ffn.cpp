#include "matmem/models/ffn/ffn.hpp"

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

FFN::FFN(const FFNConfig& config, DType dtype, std::uint64_t seed, std::string name)
    : Model(name, dtype, seed), config_(config), out_(name + "/out") {
  if (config.depth < 1) throw Error(fmt::format("model {}: depth {} (needs at least one hidden layer)", name, config.depth));
  if (config.rows < 1 || config.cols < 1)
    throw Error(fmt::format("model {}: hidden shape {}x{}", name, config.rows, config.cols));
  if (config.norm == FFNConfig::Norm::layer && config.rows * config.cols < 2)
    throw Error(fmt::format("model {}: layer norm over a {}x{} layer (needs at least 2 elements)", name, config.rows,
                            config.cols));
  set_io(config.input_rows, config.input_cols, config.output_rows, config.output_cols);
  for (std::int64_t l = 1; l <= config.depth; ++l) {
    paths_.push_back(fmt::format("{}/l{}", name, l));
    norm_paths_.push_back(fmt::format("{}/l{}/norm", name, l));
    if (config.norm == FFNConfig::Norm::batch) {
      Parameter& mean = params().add(norm_paths_.back() + "/running_mean", parameter(config.rows, config.cols));
      Parameter& var = params().add(norm_paths_.back() + "/running_var", parameter(config.rows, config.cols));
      mean.buffer = var.buffer = true;
      var.value.fill(1.0);
      running_.push_back({&mean.value, &var.value, 0.1});
    }
  }
}

void FFN::step(Step& s) {
  const FFNConfig& c = config_;
  const Shape p = matmem::parameter(c.rows, c.cols);
  Var h = s.input();
  for (std::size_t l = 0; l < paths_.size(); ++l) {
    Var z;
    if (c.norm != FFNConfig::Norm::batch) {
      z = s.mat(paths_[l], {{"h", h}}, c.rows, c.cols);
    } else if (c.rows == 1 && h.shape().rows == 1) {
      // The vector net: h V alone; batch norm cancels a 1×1 U as it cancels B.
      const Var one = s.tape().constant(matmem::parameter(1, 1), 1.0);
      z = mat({{h, one, s.parameter(paths_[l], "h", "V", matmem::parameter(h.shape().cols, c.cols))}}, Var{});
    } else {
      z = s.mat(paths_[l], {{"h", h}}, c.rows, c.cols, std::nullopt);
    }
    if (c.norm != FFNConfig::Norm::none) {
      const Var n = c.norm == FFNConfig::Norm::layer ? layer_norm(z, LayerNormOver::matrix) : batch_norm(z, running_[l]);
      z = add(hadamard(n, s.parameter(norm_paths_[l], "", "G", p, Init::Constant(1.0))),
              s.parameter(norm_paths_[l], "", "D", p, Init::Constant(0.0)));
    }
    Var f = activate(c.activation, z);
    h = c.residual && l > 0 ? add(h, f) : f;
  }
  s.output(s.mat(out_, {{"h", h}}, c.output_rows, c.output_cols));
}

}  // namespace matmem
