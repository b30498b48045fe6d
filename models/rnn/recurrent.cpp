#include "matmem/models/rnn/recurrent.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "matmem/ops/attention_read.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

RecurrentModel::RecurrentModel(const RecurrentConfig& config, DType dtype, std::uint64_t seed, std::string name)
    : Model(name.empty() ? fmt::format("mat{}", cell_name(config.cell)) : name, dtype, seed),
      config_(config),
      out_(this->name() + "/out", config.output_rows, config.output_cols) {
  if (config.layers.empty()) throw Error(fmt::format("model {}: needs at least one layer", this->name()));
  if (config.clip_logits && !(config.clip > 0))
    throw Error(fmt::format("model {}: clipping the logits needs a clip bound > 0", this->name()));
  if (config.attention_heads < 0)
    throw Error(fmt::format("model {}: {} attention heads: give 0 (none) or more", this->name(), config.attention_heads));
  set_io(config.input_rows, config.input_cols, config.output_rows, config.output_cols);
  for (std::size_t k = 0; k < config.layers.size(); ++k) {
    const auto [r, c] = config.layers[k];
    if (r < 1 || c < 1) throw Error(fmt::format("model {}: layer {} has size {}x{}", this->name(), k + 1, r, c));
    cells_.emplace_back(config.cell, fmt::format("{}/l{}", this->name(), k + 1), r, c, config.forget_bias,
                        config.clip);
    h_.push_back(fmt::format("l{}/h", k + 1));
    declare_state({h_.back(), parameter(r, c)});
    c_.push_back(fmt::format("l{}/c", k + 1));
    if (cells_.back().has_cell_state()) declare_state({c_.back(), parameter(r, c)});
  }
}

void RecurrentModel::step(Step& s) {
  Var x = s.input();
  for (std::size_t k = 0; k < cells_.size(); ++k) {
    const MatCell& cell = cells_[k];
    MatCell::State prev{s.state(h_[k]), cell.has_cell_state() ? s.state(c_[k]) : Var{}};
    const NamedTerm in[] = {{"x", x}};
    MatCell::State next = cell(s, in, prev);
    s.next(h_[k], next.h);
    if (cell.has_cell_state()) s.next(c_[k], next.c);
    x = next.h;
  }
  if (config_.attention_heads == 0) {
    if (s.output_needed()) s.output(output(out_(s, {{"h", x}})));
    return;
  }
  if (s.time() == 0) past_.clear();
  past_.push_back(x);
  if (!s.output_needed()) return;
  // P_t in stacks of at most kStackRowsMaxParts parts, stacked again until one is left.
  constexpr std::size_t most = kStackRowsMaxParts;
  std::vector<Var> parts = past_;
  while (parts.size() > 1) {
    std::vector<Var> stacked;
    for (std::size_t k = 0; k < parts.size(); k += most)
      stacked.push_back(stack_rows(std::span<const Var>(parts).subspan(k, std::min(most, parts.size() - k))));
    parts = std::move(stacked);
  }
  const Var q = tanh(s.mat(name() + "/attend", {{"h", x}}, config_.attention_heads, x.shape().cols));
  s.output(output(out_(s, {{"h", x}, {"s", attention_read(q, parts[0])}})));
}

Var RecurrentModel::output(Var y) const { return config_.clip_logits ? clip(y, config_.clip) : y; }

}  // namespace matmem
