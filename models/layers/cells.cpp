#include "matmem/models/layers/cells.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "matmem/ops/attention_read.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

Var activate(Activation a, Var x) {
  switch (a) {
    case Activation::linear: return x;
    case Activation::sigmoid: return sigmoid(x);
    case Activation::tanh: return tanh(x);
    case Activation::relu: return relu(x);
  }
  return x;
}

MatDense::MatDense(std::string path, std::int64_t rows, std::int64_t cols, Activation act)
    : path_(std::move(path)), rows_(rows), cols_(cols), act_(act) {}

Var MatDense::operator()(Step& s, std::span<const NamedTerm> terms) const {
  return activate(act_, s.mat(path_, terms, rows_, cols_));
}

MatAttention::MatAttention(std::string path, std::int64_t heads, std::int64_t rows, std::int64_t cols, Activation act)
    : query_(path + "/query"), read_(path + "/read"), heads_(heads), rows_(rows), cols_(cols), act_(act) {
  if (heads < 1) throw Error(fmt::format("{}: {} attention heads: give 1 or more", path, heads));
}

Var MatAttention::operator()(Step& s, Var p, std::span<const NamedTerm> context) const {
  std::vector<NamedTerm> terms{{"P", p}};
  terms.insert(terms.end(), context.begin(), context.end());
  Var q = tanh(s.mat(query_, terms, heads_, p.shape().cols));
  return activate(act_, s.mat(read_, {{"S", attention_read(q, p)}}, rows_, cols_));
}

MatHighway::MatHighway(std::string path, std::int64_t rows, std::int64_t cols, Activation act)
    : gate_(path + "/z"), body_(path + "/h"), rows_(rows), cols_(cols), act_(act) {}

Var MatHighway::operator()(Step& s, Var h) const {
  Var z = sigmoid(s.mat(gate_, {{"h", h}}, rows_, cols_));
  Var body = activate(act_, s.mat(body_, {{"h", h}}, rows_, cols_));
  return add(hadamard(one_minus(z), h), hadamard(z, body));
}

CellKind cell_kind(const std::string& name) {
  if (name == "rnn") return CellKind::rnn;
  if (name == "lstm") return CellKind::lstm;
  if (name == "gru") return CellKind::gru;
  if (name == "ff") return CellKind::ff;
  throw Error(fmt::format("unknown cell {} (choose rnn, lstm, gru or ff)", name));
}

const char* cell_name(CellKind k) {
  switch (k) {
    case CellKind::rnn: return "rnn";
    case CellKind::lstm: return "lstm";
    case CellKind::gru: return "gru";
    case CellKind::ff: return "ff";
  }
  return "?";
}

MatCell::MatCell(CellKind kind, std::string path, std::int64_t rows, std::int64_t cols, double forget_bias,
                 double clip)
    : kind_(kind), rows_(rows), cols_(cols), forget_bias_(forget_bias), clip_(clip), path_(std::move(path)) {
  if (!(clip >= 0) || !std::isfinite(clip))
    throw Error(fmt::format("{}: clip bound {}: give 0 (none) or a finite bound > 0", path_, clip));
  switch (kind_) {
    case CellKind::rnn:
    case CellKind::ff: gate1_ = path_; break;
    case CellKind::lstm:
      gate1_ = path_ + "/i";
      gate2_ = path_ + "/f";
      gate3_ = path_ + "/o";
      gate4_ = path_ + "/c";
      break;
    case CellKind::gru:
      gate1_ = path_ + "/z";
      gate2_ = path_ + "/r";
      gate3_ = path_ + "/h";
      break;
  }
}

MatCell::State MatCell::operator()(Step& s, std::span<const NamedTerm> terms, State prev) const {
  State next = step(s, terms, prev);
  if (clip_ > 0) {
    next.h = clip(next.h, clip_);
    if (next.c.valid()) next.c = clip(next.c, clip_);
  }
  return next;
}

MatCell::State MatCell::step(Step& s, std::span<const NamedTerm> terms, State prev) const {
  std::array<NamedTerm, 20> all;
  if (terms.size() + 1 > all.size()) throw Error(fmt::format("{}: too many inputs ({})", path_, terms.size()));
  std::copy(terms.begin(), terms.end(), all.begin());
  all[terms.size()] = {"h", prev.h};
  const std::span<const NamedTerm> in(all.data(), terms.size() + (recurrent() ? 1 : 0));
  switch (kind_) {
    case CellKind::ff:
    case CellKind::rnn: return {tanh(s.mat(gate1_, in, rows_, cols_)), {}};
    case CellKind::lstm: {
      const MatSpec gates[] = {{gate1_, rows_, cols_, 0.0}, {gate2_, rows_, cols_, forget_bias_},
                               {gate3_, rows_, cols_, 0.0}, {gate4_, rows_, cols_, 0.0}};
      std::array<Var, 4> pre;
      s.mats(in, gates, pre);
      Var i = sigmoid(pre[0]), f = sigmoid(pre[1]), o = sigmoid(pre[2]), chat = tanh(pre[3]);
      Var c = add(hadamard(f, prev.c), hadamard(i, chat));
      return {hadamard(o, tanh(c)), c};
    }
    case CellKind::gru: {
      const MatSpec gates[] = {{gate1_, rows_, cols_, 0.0}, {gate2_, rows_, cols_, 0.0}};
      std::array<Var, 2> pre;
      s.mats(in, gates, pre);
      Var z = sigmoid(pre[0]), r = sigmoid(pre[1]);
      all[terms.size()] = {"h", hadamard(r, prev.h)};
      Var htilde = tanh(s.mat(gate3_, in, rows_, cols_));
      return {add(hadamard(one_minus(z), prev.h), hadamard(z, htilde)), {}};
    }
  }
  return {};
}

Controller::Controller(const std::string& model, CellKind kind,
                       std::span<const std::pair<std::int64_t, std::int64_t>> layers, double forget_bias, double clip,
                       bool clip_logits) {
  if (kind == CellKind::gru) throw Error(fmt::format("model {}: the controller is rnn, lstm or ff", model));
  if (!(clip >= 0) || !std::isfinite(clip) || (clip_logits && clip == 0))
    throw Error(fmt::format("model {}: controller clip {} (0: none, else > 0; clipping the logits needs a bound)", model,
                            clip));
  if (layers.empty()) throw Error(fmt::format("model {}: the controller needs at least one layer", model));
  for (std::size_t k = 0; k < layers.size(); ++k) {
    cells.emplace_back(kind, fmt::format("{}/ctrl/l{}", model, k + 1), layers[k].first, layers[k].second, forget_bias,
                       clip);
    h.push_back(fmt::format("ctrl/l{}/h", k + 1));
    c.push_back(fmt::format("ctrl/l{}/c", k + 1));
  }
}

std::vector<Controller::StateShape> Controller::states() const {
  std::vector<StateShape> out;
  for (std::size_t k = 0; k < cells.size(); ++k) {
    if (cells[k].recurrent()) out.push_back({h[k], cells[k].rows(), cells[k].cols()});
    if (cells[k].has_cell_state()) out.push_back({c[k], cells[k].rows(), cells[k].cols()});
  }
  return out;
}

Var controller_step(Step& s, std::span<const MatCell> cells, std::span<const std::string> h,
                    std::span<const std::string> c, std::span<const NamedTerm> first) {
  std::span<const NamedTerm> terms = first;
  NamedTerm below;
  Var top;
  for (std::size_t l = 0; l < cells.size(); ++l) {
    const MatCell& cell = cells[l];
    MatCell::State prev{cell.recurrent() ? s.state(h[l]) : Var{}, cell.has_cell_state() ? s.state(c[l]) : Var{}};
    MatCell::State next = cell(s, terms, prev);
    if (cell.recurrent()) s.next(h[l], next.h);
    if (cell.has_cell_state()) s.next(c[l], next.c);
    top = next.h;
    below = {"x", top};
    terms = std::span<const NamedTerm>(&below, 1);
  }
  return top;
}

}  // namespace matmem
