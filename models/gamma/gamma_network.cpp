#include "matmem/models/gamma/gamma_network.hpp"

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
// The memory's taps are the input's shape (focused) or the first layer's (distributed).
std::pair<std::int64_t, std::int64_t> memory_size(const GammaNetworkConfig& c, const std::string& name) {
  if (c.layers.empty()) throw Error(fmt::format("model {}: needs at least one dense layer", name));
  for (std::size_t k = 0; k < c.layers.size(); ++k)
    if (c.layers[k].first < 1 || c.layers[k].second < 1)
      throw Error(fmt::format("model {}: layer {} has size {}x{}", name, k + 1, c.layers[k].first, c.layers[k].second));
  return c.placement == GammaNetworkConfig::Placement::input ? std::pair{c.input_rows, c.input_cols} : c.layers[0];
}
}  // namespace

GammaNetwork::GammaNetwork(const GammaNetworkConfig& config, DType dtype, std::uint64_t seed, std::string name)
    : Model(name, dtype, seed),
      config_(config),
      memory_(name + "/mem", "mem/", memory_size(config, name).first, memory_size(config, name).second, config.memory),
      out_(name + "/out", config.output_rows, config.output_cols) {
  set_io(config.input_rows, config.input_cols, config.output_rows, config.output_cols);
  for (StateDecl& d : memory_.states()) declare_state(std::move(d));
  for (std::size_t k = 0; k < config.layers.size(); ++k)
    layers_.emplace_back(fmt::format("{}/l{}", name, k + 1), config.layers[k].first, config.layers[k].second,
                         Activation::tanh);
  for (int k = 0; k <= config.memory.taps; ++k) tap_names_.push_back(fmt::format("t{}", k));
}

Var GammaNetwork::over_taps(Step& s, const MatDense& layer, const std::vector<Var>& taps) const {
  std::vector<NamedTerm> terms;
  terms.reserve(taps.size());
  for (std::size_t k = 0; k < taps.size(); ++k) terms.push_back({tap_names_[k], taps[k]});
  return layer(s, terms);
}

void GammaNetwork::step(Step& s) {
  // The memory runs every step (it is the state); the layers after it only where the output is read.
  const bool focused = config_.placement == GammaNetworkConfig::Placement::input;
  const std::vector<Var> taps = memory_(s, focused ? s.input() : layers_[0](s, {{"x", s.input()}}));
  if (!s.output_needed()) return;
  std::size_t next = focused ? 0 : 1;  // the first layer not yet applied
  if (next == layers_.size()) {
    s.output(over_taps(s, out_, taps));
    return;
  }
  Var h = over_taps(s, layers_[next++], taps);
  for (; next < layers_.size(); ++next) h = layers_[next](s, {{"h", h}});
  s.output(out_(s, {{"h", h}}));
}

}  // namespace matmem
