#include "matmem/models/graph/cln.hpp"

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

CLN::CLN(const CLNConfig& c, DType dtype, std::uint64_t seed, std::string name)
    : Model(std::move(name), dtype, seed), config_(c) {
  if (c.rows < 1 || c.cols < 1) throw Error(fmt::format("cln: state {}x{}: both sizes must be ≥ 1", c.rows, c.cols));
  if (c.height < 1 || c.height > 64) throw Error(fmt::format("cln: height {}: choose 1 to 64", c.height));
  if (c.aggregate == CLNConfig::Aggregate::flatten && (c.slots < 1 || c.slots > 4096))
    throw Error(fmt::format("cln: {} slots: choose 1 to 4096", c.slots));
  if (c.aggregate == CLNConfig::Aggregate::attention && (c.heads < 1 || c.heads > 64))
    throw Error(fmt::format("cln: {} heads: choose 1 to 64", c.heads));
  if (c.embed == CLNConfig::Embed::dense && c.rows > 21)
    throw Error(fmt::format("cln: state {}x{}: the dense embedding takes at most 21 rows (embed = matrix takes any)",
                            c.rows, c.cols));
  set_io(c.input_rows, c.input_cols, c.output_rows, c.output_cols);
  const std::int64_t terms = c.embed == CLNConfig::Embed::dense ? c.rows : 1;
  for (std::int64_t k = 1; k <= terms; ++k) embed_terms_.push_back(terms == 1 ? "x" : fmt::format("x{}", k));
  for (std::int64_t t = 1; t <= c.height; ++t) {
    layer_.push_back(fmt::format("layer{}", t));
    gate_.push_back(fmt::format("layer{}/gate", t));
    if (c.aggregate == CLNConfig::Aggregate::attention)
      for (std::int64_t k = 1; k <= c.heads; ++k) query_.push_back(fmt::format("layer{}/query{}", t, k));
  }
  if (c.aggregate == CLNConfig::Aggregate::attention) queries_.resize(std::size_t(c.heads));
}

void CLN::step(Step& s) {
  const CLNConfig& c = config_;
  const Neighbours* g = s.graph();
  if (!g) {
    if (built()) throw Error(fmt::format("model {} reads a graph: train it on a graph task (task = graph)", name()));
    none_.offsets.assign(std::size_t(s.batch()) + 1, 0);
    none_.index.clear();
    g = &none_;
  }
  embed_.clear();
  for (const std::string& name : embed_terms_) embed_.push_back({name, s.input()});
  Var h = relu(s.mat("embed", embed_, c.rows, c.cols));
  for (std::size_t t = 0; t < std::size_t(c.height); ++t) {
    Var read;
    if (c.aggregate == CLNConfig::Aggregate::mean) {
      read = neighbour_mean(h, *g);
    } else if (c.aggregate == CLNConfig::Aggregate::flatten) {
      read = neighbour_stack(h, *g, c.slots);
    } else {
      specs_.clear();
      for (std::size_t k = 0; k < std::size_t(c.heads); ++k)
        specs_.push_back({query_[t * std::size_t(c.heads) + k], c.rows, c.cols, 0.0});
      s.projections({"h", h}, specs_, queries_);
      read = neighbour_attention(h, queries_, *g);
    }
    Var next = relu(s.mat(layer_[t], {{"self", h}, {"neighbours", read}}, c.rows, c.cols));
    if (c.highway) {
      Var z = sigmoid(s.mat(gate_[t], {{"h", h}}, c.rows, c.cols));
      next = hadamard(z, next) + hadamard(one_minus(z), h);
    }
    h = next;
  }
  s.output(s.mat("out", {{"h", h}}, c.output_rows, c.output_cols));
}

}  // namespace matmem
