#include "matmem/models/core/model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numbers>

#include <fmt/format.h>

#include "matmem/models/layers/init.hpp"
#include "matmem/models/tasks/tasks.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
void initialise(Parameter& p, const Init& init, Rng& rng) {
  switch (init.kind) {
    case Init::glorot: glorot_uniform(p, rng); break;
    case Init::constant: init_constant(p, init.a); break;
    case Init::normal: init_normal(p, rng, init.a, init.b); break;
    case Init::identity: init_identity(p, init.a); break;
  }
}
// A 64-bit hash of the name's parts, eight bytes a multiply, each part closed by its length so ("ab","c") and
// ("a","bc") differ. A parameter is looked up at every time step (Step's cache checks the name's hash), so the
// hash is a few multiplies: a part's last 1–8 bytes are one load (overlapping the bytes before them, or two or
// three loads of a short part), not a loop over bytes. Kept in memory only (Step's cache), never written.
std::uint64_t name_key(std::string_view path, std::string_view term, std::string_view leaf) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&](std::uint64_t w) {
    h = (h ^ w) * kMul;
    h ^= h >> 32;
  };
  const auto load = [](const char* p, std::size_t bytes) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, bytes);
    return w;
  };
  for (std::string_view part : {path, term, leaf}) {
    const char* p = part.data();
    const std::size_t size = part.size();
    std::size_t n = size;
    for (; n > 8; p += 8, n -= 8) mix(load(p, 8));
    // the last n bytes (1..8 of a part of 8 or more: its last eight, shifted down to them; else 0..7)
    std::uint64_t tail = 0;
    if (size >= 8) tail = load(p + n - 8, 8) >> (8 * (8 - n));
    else if (n >= 4) tail = load(p, 4) | load(p + n - 4, 4) << 32;
    else if (n > 0) tail = std::uint64_t(std::uint8_t(p[0])) | std::uint64_t(std::uint8_t(p[n / 2])) << 8 |
                           std::uint64_t(std::uint8_t(p[n - 1])) << 16;
    mix(tail ^ std::uint64_t(size) << 56);
  }
  return h;
}
Shape with_batch(Shape s, std::int64_t b) {
  s.batch = b;
  return s;
}
}  // namespace

// --- Model ---------------------------------------------------------------------------------------------------
Model::Model(std::string name, DType dtype, std::uint64_t seed)
    : name_(std::move(name)), params_(dtype), init_rng_(seed) {}

void Model::set_io(std::int64_t in_rows, std::int64_t in_cols, std::int64_t out_rows, std::int64_t out_cols) {
  input_rows_ = in_rows;
  input_cols_ = in_cols;
  output_rows_ = out_rows;
  output_cols_ = out_cols;
}

void Model::declare_state(StateDecl d) {
  for (const StateDecl& s : states_)
    if (s.name == d.name) throw Error(fmt::format("model {}: state {} is declared twice", name_, d.name));
  d.shape.batch = 1;
  if (d.start == StateDecl::given && (d.initial.shape() != d.shape || d.initial.dtype() != dtype()))
    throw ShapeError(fmt::format("model {}: state {} is {} but its initial value is {}", name_, d.name,
                                 d.shape.str(), d.initial.shape().str()));
  Parameter* p = nullptr;
  if (d.start == StateDecl::learned) {
    p = &params_.add(fmt::format("{}/init/{}", name_, d.name), d.shape);
    initialise(*p, d.learned_init, init_rng_);
  }
  states_.push_back(std::move(d));
  state_params_.push_back(p);
}

void Model::set_vector_u(VectorU u) {
  if (built_ && u != vector_u_)
    throw Error(fmt::format("model {}: vector_u is set before the parameters exist (build())", name_));
  vector_u_ = u;
}

void Model::build() {
  if (built_) return;
  Tape tape(dtype());
  NoGrad no_grad(tape);
  Step s(*this, tape);
  s.begin_sequence(1);
  s.begin_step(0, tape.constant(matrices(1, input_rows_, input_cols_), 0.0), true);
  step(s);
  if (!s.last_output().valid()) throw Error(fmt::format("model {}: step() set no output", name_));
  if (s.last_output().shape() != matrices(1, output_rows_, output_cols_))
    throw ShapeError(fmt::format("model {}: step() output is {}, the model declares [B,{},{}]", name_,
                                 s.last_output().shape().str(), output_rows_, output_cols_));
  s.end_step();
  built_ = true;
}

// --- Step ----------------------------------------------------------------------------------------------------
Step::Step(Model& model, Tape& tape) : model_(model), tape_(tape) {
  current_.resize(model.states_.size());
  next_.resize(model.states_.size());
  chains_.resize(model.states_.size(), ChainLink::kNone);
  cache_.reserve(64);
  name_scratch_.reserve(128);
}

std::size_t Step::state_index(std::string_view name) const {
  for (std::size_t k = 0; k < model_.states_.size(); ++k)
    if (model_.states_[k].name == name) return k;
  throw Error(fmt::format("model {}: no state named {}", model_.name_, name));
}

Var Step::state(std::string_view name) const { return current_[state_index(name)]; }

void Step::next(std::string_view name, Var value) {
  const std::size_t k = state_index(name);
  const Shape want = with_batch(model_.states_[k].shape, batch_);
  if (value.shape() != want)
    throw ShapeError(fmt::format("model {}: next state {} is {}, declared {}", model_.name_, name,
                                 value.shape().str(), want.str()));
  next_[k] = value;
}

Var Step::parameter(std::string_view path, std::string_view term, std::string_view leaf, const Shape& shape,
                    const Init& init) {
  const std::uint64_t key = name_key(path, term, leaf);
  if (request_ < cache_.size()) {
    const CachedParam& c = cache_[request_];
    if (c.key == key && c.param->value.shape() == shape) {
      ++request_;
      return tape_.param(*c.param);
    }
  }
  name_scratch_.assign(path);
  if (!term.empty()) name_scratch_.append("/").append(term);
  name_scratch_.append("/").append(leaf);
  Parameter* p = model_.params_.find(name_scratch_);
  if (!p) {
    if (model_.built_)
      throw Error(fmt::format("model {}: the step asks for parameter {} which its first step did not create "
                              "(a step must use the same parameters at every time step)",
                              model_.name_, name_scratch_));
    p = &model_.params_.add(name_scratch_, shape);
    initialise(*p, init, model_.init_rng_);
  } else if (p->value.shape() != shape) {
    throw ShapeError(fmt::format("model {}: parameter {} is {} but the step asks for {}", model_.name_,
                                 name_scratch_, p->value.shape().str(), shape.str()));
  }
  const CachedParam entry{key, p};
  if (request_ < cache_.size())
    cache_[request_] = entry;
  else
    cache_.push_back(entry);
  ++request_;
  return tape_.param(*p);
}

Var Step::mat(std::string_view path, std::span<const NamedTerm> terms, std::int64_t rows, std::int64_t cols,
              std::optional<double> bias) {
  std::array<MatTerm, 21> mt;
  if (terms.size() > mt.size()) throw Error(fmt::format("{}: at most {} terms", path, mt.size()));
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const Shape x = terms[k].x.shape();  // a copy: parameter() may record a leaf, moving the tape's nodes
    const bool unit = unit_u_.valid() && x.rows == 1 && rows == 1;
    mt[k] = {terms[k].x, unit ? unit_u_ : parameter(path, terms[k].name, "U", matmem::parameter(x.rows, rows)),
             parameter(path, terms[k].name, "V", matmem::parameter(x.cols, cols))};
  }
  const Var b = bias ? parameter(path, "", "B", matmem::parameter(rows, cols), Init::Constant(*bias)) : Var{};
  return matmem::mat(std::span<const MatTerm>(mt.data(), terms.size()), b);
}

Var Step::mat(std::string_view path, std::initializer_list<NamedTerm> terms, std::int64_t rows, std::int64_t cols,
              std::optional<double> bias) {
  return mat(path, std::span<const NamedTerm>(terms.begin(), terms.size()), rows, cols, bias);
}

void Step::projections(NamedTerm x, std::span<const ProjectionSpec> p, std::span<Var> out) {
  if (out.size() != p.size())
    throw Error(fmt::format("projections: {} specs, room for {} outputs", p.size(), out.size()));
  // A copy: a Var's shape lives in the tape's node list, which the parameters' leaves and every group's
  // op node may move to a larger allocation.
  const Shape xs = x.x.shape();
  // Each group's U_k (the matrix form) or, for a row x with every output a row (every U 1x1), its V_k (the
  // vector form, stacked_projections) are stacked once a pass, and x projected through the stack at every time
  // step (ops/projections.cpp).
  const bool vector = xs.rows == 1 && std::all_of(p.begin(), p.end(), [](const ProjectionSpec& q) { return q.rows == 1; });
  std::array<Var, Tape::kMaxOutputs> u, v, b;
  for (std::size_t first = 0; first < p.size(); first += Tape::kMaxOutputs) {
    const std::size_t n = std::min(p.size() - first, Tape::kMaxOutputs);
    for (std::size_t k = 0; k < n; ++k) {  // each map's U, V and B in that order
      const ProjectionSpec& q = p[first + k];
      const bool unit = unit_u_.valid() && xs.rows == 1 && q.rows == 1;
      u[k] = unit ? unit_u_ : parameter(q.path, x.name, "U", matmem::parameter(xs.rows, q.rows));
      v[k] = parameter(q.path, x.name, "V", matmem::parameter(xs.cols, q.cols));
      b[k] = parameter(q.path, "", "B", matmem::parameter(q.rows, q.cols), Init::Constant(q.bias));
    }
    const std::span<const Var> us(u.data(), n), vs(v.data(), n), bs(b.data(), n);
    if (vector)
      matmem::stacked_projections(x.x, stacked_columns(vs), us, bs, out.subspan(first, n));
    else
      matmem::projections(x.x, stacked_columns(us), vs, bs, out.subspan(first, n));
  }
}

void Step::mats(std::span<const NamedTerm> terms, std::span<const MatSpec> p, std::span<Var> out) {
  if (out.size() != p.size()) throw Error(fmt::format("mats: {} specs, room for {} outputs", p.size(), out.size()));
  const std::size_t T = terms.size(), G = p.size();
  const bool rows = std::all_of(p.begin(), p.end(), [](const MatSpec& q) { return q.rows == 1; });
  if (!rows || T == 0 || G > Tape::kMaxOutputs || 2 * T + T * G + G > kStackedMatsMaxInputs) {
    for (std::size_t g = 0; g < G; ++g) out[g] = mat(p[g].path, terms, p[g].rows, p[g].cols, p[g].bias);
    return;
  }
  // The parameters in mat()'s order: each output's U and V term by term, then its B.
  std::array<Var, kStackedMatsMaxInputs> u, v, b;
  std::array<Shape, kStackedMatsMaxInputs> xs;  // copies: parameter() may move the tape's nodes
  for (std::size_t t = 0; t < T; ++t) xs[t] = terms[t].x.shape();
  for (std::size_t g = 0; g < G; ++g) {
    for (std::size_t t = 0; t < T; ++t) {
      const std::int64_t rows_t = xs[t].rows, cols_t = xs[t].cols;
      u[t * G + g] = unit_u_.valid() && rows_t == 1
                         ? unit_u_
                         : parameter(p[g].path, terms[t].name, "U", matmem::parameter(rows_t, 1));
      v[t * G + g] = parameter(p[g].path, terms[t].name, "V", matmem::parameter(cols_t, p[g].cols));
    }
    b[g] = parameter(p[g].path, "", "B", matmem::parameter(1, p[g].cols), Init::Constant(p[g].bias));
  }
  std::array<Var, kStackedMatsMaxInputs> x, vs;
  for (std::size_t t = 0; t < T; ++t)
    x[t] = terms[t].x, vs[t] = stacked_columns(std::span<const Var>(v.data() + t * G, G));
  matmem::stacked_mats(std::span<const Var>(x.data(), T), std::span<const Var>(vs.data(), T),
                       std::span<const Var>(u.data(), T * G), std::span<const Var>(b.data(), G), out);
}

Var Step::stacked_columns(std::span<const Var> v) {
  // The pass's stacks in the order the step asks for them; a group whose first V is another than the one
  // stacked at this place (a step that changes its maps) gets a stack of its own.
  const std::size_t k = stacked_request_++;
  if (k < stacked_.size() && stacked_[k].first == v[0].id) return stacked_[k].second;
  const Var vs = stack_columns(v);
  if (k < stacked_.size())
    stacked_[k] = {v[0].id, vs};
  else
    stacked_.push_back({v[0].id, vs});
  return vs;
}

void Step::begin_sequence(std::int64_t batch) {
  batch_ = batch;
  stacked_.clear();  // the stacks of the last pass are nodes of a cleared tape
  unit_u_ = model_.vector_u_ == Model::VectorU::one ? tape_.constant(matmem::parameter(1, 1), 1.0) : Var{};
  for (std::size_t k = 0; k < model_.states_.size(); ++k) {
    const StateDecl& d = model_.states_[k];
    const Shape shape = with_batch(d.shape, batch);
    switch (d.start) {
      case StateDecl::zero: current_[k] = tape_.constant(shape, 0.0); break;
      case StateDecl::constant: current_[k] = tape_.constant(shape, d.value); break;
      case StateDecl::learned:
        current_[k] = add(tape_.constant(shape, 0.0), tape_.param(*model_.state_params_[k]));
        break;
      case StateDecl::given:
        current_[k] = add(tape_.constant(shape, 0.0), tape_.input(d.initial));
        break;
    }
    next_[k] = {};
    chains_[k] = ChainLink::kNone;
    if (d.segment != 1)
      chains_[k] = tape_.chain(d.segment > 1 ? d.segment
                                             : auto_segment(std::size_t(shape.numel()) * size_of(tape_.dtype())));
  }
}

int Step::auto_segment(std::size_t bytes) {
  if (bytes < kChainMinBytes) return 1;
  const std::size_t fit = kRingBytes / bytes;
  return fit < 1 ? 1 : int(std::min<std::size_t>(fit + 1, 8));
}

ChainLink Step::link(std::string_view name) { return ChainLink(tape_, chains_[state_index(name)]); }

void Step::begin_step(std::int64_t t, Var input, bool output_needed) {
  time_ = t;
  input_ = input;
  output_ = {};
  output_needed_ = output_needed;
  request_ = 0;
  stacked_request_ = 0;
}

void Step::end_step() {
  const double clip = model_.state_gradient_clip_;
  for (std::size_t k = 0; k < current_.size(); ++k)
    if (next_[k].valid()) {
      // Model::set_state_gradient_clip: not on a chain's state, whose values a ring buffer holds.
      current_[k] = clip > 0 && chains_[k] == ChainLink::kNone && next_[k].requires_grad()
                        ? clip_gradient(next_[k], clip)
                        : next_[k];
      next_[k] = {};
    }
}

// --- Unroller ------------------------------------------------------------------------------------------------
double Unroller::NmseSums::nmse() const {
  // Σ (t − t̄)² = Σ t² − (Σ t)² / n; a constant target: the mean squared error.
  const double spread = target_squares - target_sum * target_sum / double(count);
  return spread > 1e-12 * target_squares ? squared_error / spread : squared_error / double(count);
}

Unroller::Unroller(Model& model, Tape& tape) : model_(model), tape_(tape), step_(model, tape) {
  result_.logits.reserve(64);
  losses_.reserve(64);
}

// Target step k of a masked run (Sequence::lane_mask), w_b the lane's weight 1/(n_b·B'), m_b its mask:
//   bits:    Σ_{b,i,j} (m_b w_b / (r c)) (softplus(y) − y t)      (softplus(y) − y t is the BCE with logits)
//   reals:   Σ_{b,i,j} (m_b w_b / (r c)) (y − t)²
//   classes: softmax_cross_entropy(y, t'), t' = t · m_b w_b B per lane (its mean over the B·r rows is linear in
//            the target, and its gradient softmax(y) Σ t' − t' holds for any target sums)
// The cost counts the lanes with m_b ≠ 0 only, divided by B' (`lanes`); reals add to the NMSE's sums.
template <class T>
void Unroller::run_masked_step(const Sequence& seq, std::size_t k, Var y, Var t_var, const T* x, NmseSums& reals,
                               std::int64_t lanes) {
  const Tensor& target = seq.targets[k];
  const Shape& s = target.shape();
  const std::int64_t B = s.batch, r = s.rows, c = s.cols;
  const float* m = seq.lane_mask.data() + k * std::size_t(B);
  // The per-element weights of bits and reals, the weighted targets of classes: a value the tape holds.
  const Var weights = tape_.constant(s, 0.0);
  T* wv = weights.value<T>().data;
  const T* t = t_var.value<T>().data;
  auto lane_weight = [&](std::int64_t b) { return m[b] != 0 ? lane_weight_[std::size_t(b)] : 0.0; };
  switch (seq.kind) {
    case TargetKind::bits:
    case TargetKind::probabilities:
    case TargetKind::reals: {
      const bool binary = seq.kind != TargetKind::reals;
      std::int64_t errors = 0;
      double nats = 0;
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t j = 0; j < c; ++j) {
            const std::int64_t o = s.offset(b, 0, i, j);
            wv[o] = T(lane_weight(b) / double(r * c));
            if (m[b] == 0) continue;
            if (seq.kind == TargetKind::bits) {
              errors += (x[o] > T(0)) != (t[o] > T(0.5));
            } else if (seq.kind == TargetKind::probabilities) {
              const double v = double(x[o]);
              nats += std::max(v, 0.0) + std::log1p(std::exp(-std::abs(v))) - v * double(t[o]);
            } else {
              reals.add(double(x[o]), double(t[o]));
            }
          }
      if (binary) {
        losses_.push_back(sum(hadamard(weights, sub(softplus(y), hadamard(y, t_var)))));
        result_.bits += (seq.kind == TargetKind::bits ? double(errors) : nats / std::numbers::ln2) / double(lanes);
      } else {
        const Var d = sub(y, t_var);
        losses_.push_back(sum(hadamard(weights, hadamard(d, d))));
      }
      break;
    }
    case TargetKind::classes: {
      std::int64_t wrong = 0;
      for (std::int64_t row = 0; row < B * r; ++row) {  // row i·B + b of the frame is row i of sequence b
        const std::int64_t b = row % B;
        const double f = lane_weight(b) * double(B);
        for (std::int64_t j = 0; j < c; ++j) wv[row * c + j] = T(double(t[row * c + j]) * f);
        if (m[b] == 0) continue;
        const T* yr = t + row * c;
        if (std::all_of(yr, yr + c, [](T v) { return v == T(0); })) continue;  // a row without a target
        wrong += std::max_element(x + row * c, x + (row + 1) * c) - (x + row * c) != std::max_element(yr, yr + c) - yr;
      }
      losses_.push_back(softmax_cross_entropy(y, weights));
      result_.bits += double(wrong) / double(lanes);
      break;
    }
  }
}

const SequenceResult& Unroller::run(const Sequence& seq) {
  if (!model_.built()) model_.build();
  if (seq.inputs.empty()) throw Error("run: the sequence has no frames");
  const std::int64_t B = seq.inputs[0].shape().batch;
  const Shape frame = matrices(B, model_.input_rows(), model_.input_cols());
  if (seq.inputs[0].shape() != frame)
    throw ShapeError(fmt::format("model {} reads frames {} but the task gives {}", model_.name(), frame.str(),
                                 seq.inputs[0].shape().str()));
  if (!seq.targets.empty() && seq.targets[0].shape() != matrices(B, model_.output_rows(), model_.output_cols()))
    throw ShapeError(fmt::format("model {} writes outputs [B,{},{}] but the task's targets are {}", model_.name(),
                                 model_.output_rows(), model_.output_cols(), seq.targets[0].shape().str()));
  tape_.clear();
  step_.set_graph(seq.graph.get());
  step_.begin_sequence(B);
  result_.logits.clear();
  result_.bits = 0;
  losses_.clear();
  std::size_t next_target = 0;
  NmseSums reals;
  // A lane mask (Sequence::lane_mask): w_b = 1 / (n_b·B') for a sequence with n_b > 0 target steps, B' of them.
  const bool masked = !seq.lane_mask.empty();
  std::int64_t lanes_with_target = B;
  if (masked) {
    if (seq.lane_mask.size() != seq.targets.size() * std::size_t(B))
      throw Error(fmt::format("run: a lane mask of {} entries for {} target steps of {} sequences",
                              seq.lane_mask.size(), seq.targets.size(), B));
    lane_weight_.assign(std::size_t(B), 0.0);
    for (std::size_t k = 0; k < seq.targets.size(); ++k)
      for (std::int64_t b = 0; b < B; ++b) lane_weight_[std::size_t(b)] += seq.lane_mask[k * std::size_t(B) + std::size_t(b)] != 0;
    lanes_with_target = std::count_if(lane_weight_.begin(), lane_weight_.end(), [](double n) { return n > 0; });
    if (lanes_with_target == 0) throw Error("run: the lane mask leaves no sequence a target");
    for (double& w : lane_weight_) w = w > 0 ? 1.0 / (w * double(lanes_with_target)) : 0.0;
  }
  for (std::size_t t = 0; t < seq.inputs.size(); ++t) {
    const bool is_target = next_target < seq.target_steps.size() && seq.target_steps[next_target] == std::int64_t(t);
    step_.begin_step(std::int64_t(t), tape_.input(seq.inputs[t]), is_target);
    model_.step(step_);
    if (is_target) {
      Var y = step_.last_output();
      if (!y.valid()) throw Error(fmt::format("model {}: no output at target step {}", model_.name(), t));
      const Tensor& target = seq.targets[next_target];
      const Var t_var = tape_.input(target);
      result_.logits.push_back(y);
      dispatch(tape_.dtype(), [&](auto z) {
        using T = decltype(z);
        const T* x = y.value<T>().data;
        if (masked) {
          run_masked_step<T>(seq, next_target, y, t_var, x, reals, lanes_with_target);
          return;
        }
        switch (seq.kind) {
          case TargetKind::bits:
            losses_.push_back(bce_with_logits(y, t_var));
            result_.bits += bit_errors_per_sequence(x, target);
            break;
          case TargetKind::probabilities:
            losses_.push_back(bce_with_logits(y, t_var));
            result_.bits += cross_entropy_bits_per_sequence(x, target);
            break;
          case TargetKind::classes: {
            // Rows of zeros carry no target (models/tasks/tasks.hpp): the mean is over the labelled rows.
            const T* t = t_var.value<T>().data;
            const std::int64_t c = target.shape().cols, rows = target.numel() / c;
            std::int64_t labelled = 0;
            for (std::int64_t r = 0; r < rows; ++r)
              labelled += std::any_of(t + r * c, t + (r + 1) * c, [](T v) { return v != T(0); });
            Var loss = softmax_cross_entropy(y, t_var);
            if (labelled > 0 && labelled < rows) loss = scale(loss, double(rows) / double(labelled));
            losses_.push_back(loss);
            result_.bits += class_errors_per_sequence(x, target);
            break;
          }
          case TargetKind::reals: {
            losses_.push_back(mse(y, t_var));
            const T* t = t_var.value<T>().data;
            for (std::int64_t k = 0; k < target.numel(); ++k) reals.add(double(x[k]), double(t[k]));
            break;
          }
        }
      });
      ++next_target;
    }
    step_.end_step();
  }
  if (losses_.empty()) throw Error("run: the sequence has no targets");
  if (seq.kind == TargetKind::reals) result_.bits = reals.nmse();
  Var total = losses_[0];
  for (std::size_t k = 1; k < losses_.size(); ++k) total = add(total, losses_[k]);
  // Masked: each step's loss already carries its lanes' weights 1/(n_b·B').
  result_.loss = masked ? total : scale(total, 1.0 / double(losses_.size()));
  return result_;
}

}  // namespace matmem
