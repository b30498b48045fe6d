#include "matmem/autodiff/tape.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "matmem/autodiff/parameters.hpp"
#include "matmem/autodiff/profile.hpp"
#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
constexpr std::size_t kMaxArity = 64;
using Clock = std::chrono::steady_clock;
double ns_since(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }
// The profile's row for each backward call's set-up: gathering the inputs, and their gradient buffers
// (taken from the free lists and zeroed where the op accumulates into them), and the gradients of outputs
// nothing consumed. It has no kernel of its own.
constexpr OpDef kBackwardSetup{"(backward set-up)", nullptr, nullptr, nullptr, nullptr};
constexpr OpDef kDeferredProducts{"(deferred gradients)", nullptr, nullptr, nullptr, nullptr};
// And for the forward re-runs of recomputed chains' segments (Tape::chain).
constexpr OpDef kRecompute{"(recompute)", nullptr, nullptr, nullptr, nullptr};
std::atomic<std::uint64_t> next_epoch{1};

// An op's forward kernel, timed into the profile if there is one (bytes: its outputs and saved buffers).
template <class T>
void run_forward(const OpDef& op, const OpCall<T>& c, OpProfile* profile, double bytes) {
  if (!profile) return op.forward<T>()(c);
  const auto t0 = Clock::now();
  op.forward<T>()(c);
  profile->add_forward(op, ns_since(t0), bytes);
}
}  // namespace

Tape::Tape(DType dtype) : dtype_(dtype), epoch_(next_epoch++) {
  nodes_.reserve(1024);
  inputs_.reserve(2048);
  call_shapes_.resize(kMaxArity);
  call_values_.resize(kMaxArity);
  call_grads_.resize(kMaxArity);
  call_ys_.resize(kMaxOutputs);
  call_grad_ys_.resize(kMaxOutputs);
  call_y_shapes_.resize(kMaxOutputs);
}

Var Tape::leaf(void* value, Shape shape, bool requires_grad) {
  Node n;
  n.value = value;
  n.shape = shape;
  n.requires_grad = requires_grad && grad_enabled_;
  nodes_.push_back(n);
  return {this, std::uint32_t(nodes_.size() - 1)};
}

Var Tape::input(const Tensor& value, bool requires_grad) {
  if (value.dtype() != dtype_)
    throw Error(fmt::format("input {}: tape computes in {}, the tensor holds {}", value.shape().str(),
                            name_of(dtype_), name_of(value.dtype())));
  return leaf(const_cast<void*>(value.raw()), value.shape(), requires_grad);
}

Var Tape::input(TensorView<const float> v, bool requires_grad) {
  if (dtype_ != DType::f32) throw Error("input: a float32 view given to a float64 tape");
  return leaf(const_cast<float*>(v.data), v.shape, requires_grad);
}

Var Tape::input(TensorView<const double> v, bool requires_grad) {
  if (dtype_ != DType::f64) throw Error("input: a float64 view given to a float32 tape");
  return leaf(const_cast<double*>(v.data), v.shape, requires_grad);
}

Var Tape::constant(Shape shape, double fill) {
  void* p = arena_.allocate<std::byte>(std::size_t(shape.numel()) * size_of(dtype_));
  dispatch(dtype_, [&](auto z) {
    using T = decltype(z);
    std::fill_n(static_cast<T*>(p), shape.numel(), T(fill));
  });
  return leaf(p, shape, false);
}

Var Tape::param(Parameter& p) {
  if (p.tape_epoch == epoch_) return {this, p.tape_node};
  if (p.value.dtype() != dtype_)
    throw Error(fmt::format("parameter {} holds {}, the tape computes in {}", p.name, name_of(p.value.dtype()),
                            name_of(dtype_)));
  Var v = leaf(p.value.raw(), p.value.shape(), true);
  Node& n = nodes_[v.id];
  n.param = &p;
  n.grad = p.grad.raw();
  n.grad_live = true;
  p.tape_epoch = epoch_;
  p.tape_node = v.id;
  return v;
}

template <class T>
void Tape::check_finite(const T* data, const Shape& shape, std::uint32_t id, const char* what) const {
  for (std::int64_t k = 0; k < shape.numel(); ++k) {
    if (!std::isfinite(data[k])) {
      // Recover logical coordinates of flat index k (layout in runtime/shape.hpp).
      std::int64_t j = k % shape.cols, rest = k / shape.cols;
      std::int64_t b = rest % shape.batch;
      rest /= shape.batch;
      std::int64_t i = rest % shape.rows, n = rest / shape.rows;
      throw NumericError(fmt::format("anomaly: {} {} {} at (b={}, n={}, i={}, j={}) of {}", describe(id), what,
                                     std::isnan(data[k]) ? "NaN" : "Inf", b, n, i, j, shape.str()));
    }
  }
}

void* Tape::scratch(std::int64_t count) {
  const std::size_t doubles = (std::size_t(count) * size_of(dtype_) + sizeof(double) - 1) / sizeof(double);
  if (scratch_.size() < doubles) scratch_.resize(doubles);
  return scratch_.data();
}

// An op's node (its output 0) with its inputs recorded and its value and saved buffers allocated; the
// apply()s push it.
inline Tape::Node Tape::op_node(const OpDef& op, std::span<const Var> in, const Shape& y_shape, OpAttrs attrs,
                                std::int64_t saved, std::int64_t scratch_count) {
  if (in.size() > kMaxArity) throw Error(fmt::format("{}: {} inputs, at most {}", op.name, in.size(), kMaxArity));
  Node n;
  n.op = &op;
  n.shape = y_shape;
  n.attrs = attrs;
  n.first_input = std::uint32_t(inputs_.size());
  n.arity = std::uint32_t(in.size());
  bool needs = false;
  for (const Var& v : in) {
    if (v.tape != this) throw Error(fmt::format("{}: an input belongs to another tape (or was cleared)", op.name));
    inputs_.push_back(v.id);
    const Node& x = nodes_[v.id];
    needs = needs || x.requires_grad;
    if (x.chain) {
      check_resident(v.id, op);
      n.ring_io = true;
    }
  }
  n.requires_grad = needs && grad_enabled_;
  const std::size_t esize = size_of(dtype_);
  const std::size_t bytes = std::size_t(y_shape.numel()) * esize;
  if (pending_link_) {
    n.value = link_value(n, std::uint32_t(nodes_.size()), bytes, in);
    n.ring_io = n.ring_io || n.chain;
  } else {
    n.value = arena_.allocate<std::byte>(bytes);
  }
  n.saved_count = saved;
  n.scratch_count = scratch_count;
  if (saved > 0) n.saved = arena_.allocate<std::byte>(std::size_t(saved) * esize);
  return n;
}

// The inputs' shapes and values for an op call (call_shapes_, call_values_), and its FLOPs counted.
inline Shape* Tape::gather_inputs(const OpDef& op, std::span<const Var> in, const Shape& y_shape, OpAttrs attrs,
                                  bool requires_grad) {
  Shape* xs = call_shapes_.data();
  for (std::size_t a = 0; a < in.size(); ++a) {
    xs[a] = nodes_[in[a].id].shape;
    call_values_[a] = nodes_[in[a].id].value;
  }
  count_flops(op, xs, int(in.size()), y_shape, attrs, requires_grad);
  if (profile_ && op.gemm && !op.traffic) count_operands(op, in, double(y_shape.numel()), requires_grad);
  return xs;
}

// A matrix product's least traffic, for the bench's limit: forward reads its inputs and writes its output;
// backward reads the inputs and the output's gradient and writes the gradients of the inputs that are not
// parameters (a parameter's gradient may be formed once a pass: ops/defers). At batch 1 the weights are most of it.
void Tape::count_operands(const OpDef& op, std::span<const Var> in, double out_elements, bool requires_grad) {
  double read = 0, written = 0;
  for (const Var& v : in) {
    const Node& x = nodes_[v.id];
    read += double(x.shape.numel());
    if (x.requires_grad && !x.param) written += double(x.shape.numel());
  }
  const double values = read + out_elements + (requires_grad ? read + out_elements + written : 0.0);
  profile_->add_traffic(op, double(size_of(dtype_)) * values);
}

inline void Tape::count_flops(const OpDef& op, const Shape* xs, int arity, const Shape& y_shape, OpAttrs attrs,
                              bool requires_grad) {
  if (op.flops) {
    const Flops f = op.flops(xs, arity, y_shape, attrs);
    flops_.forward += f.forward;
    if (requires_grad) flops_.backward += f.backward;
    if (profile_) profile_->add_flops(op, f.forward + (requires_grad ? f.backward : 0.0));
  }
  if (profile_ && op.traffic) {
    const Traffic t = op.traffic(xs, arity, y_shape, attrs);
    profile_->add_traffic(op, double(size_of(dtype_)) * (t.forward + (requires_grad ? t.backward : 0.0)));
  }
}

// One output: kept apart from the several-output apply below, whose generality costs tens of ns per op.
Var Tape::apply(const OpDef& op, std::span<const Var> in, Shape y_shape, OpAttrs attrs, std::int64_t saved,
                std::int64_t scratch_count) {
  const Node n = op_node(op, in, y_shape, attrs, saved, scratch_count);
  nodes_.push_back(n);
  const std::uint32_t id = std::uint32_t(nodes_.size() - 1);
  const std::size_t esize = size_of(dtype_);
  Shape* xs = gather_inputs(op, in, y_shape, attrs, n.requires_grad);
  dispatch(dtype_, [&](auto z) {
    using T = decltype(z);
    OpCall<T> c;
    c.arity = int(in.size());
    c.x = reinterpret_cast<const T* const*>(call_values_.data());
    c.x_shape = xs;
    c.y = static_cast<T*>(n.value);
    c.y_shape = y_shape;
    c.ys = &c.y;
    c.y_shapes = &c.y_shape;
    c.saved = static_cast<T*>(n.saved);
    c.scratch = scratch_count > 0 ? static_cast<T*>(scratch(scratch_count)) : nullptr;
    c.attrs = attrs;
    run_forward(op, c, profile_, double((y_shape.numel() + saved) * esize));
    if (anomaly_) check_finite(c.y, y_shape, id, "produced");
  });
  return {this, id};
}

void Tape::apply(const OpDef& op, std::span<const Var> in, std::span<const Shape> y_shapes, std::span<Var> out,
                 OpAttrs attrs, std::int64_t saved, std::int64_t scratch_count) {
  if (y_shapes.empty() || y_shapes.size() > kMaxOutputs || out.size() != y_shapes.size())
    throw Error(fmt::format("{}: {} outputs, between 1 and {}", op.name, y_shapes.size(), kMaxOutputs));
  const std::size_t outputs = y_shapes.size();
  const Shape y_shape = y_shapes[0];
  Node n = op_node(op, in, y_shape, attrs, saved, scratch_count);
  n.outputs = std::uint8_t(outputs);
  nodes_.push_back(n);
  const std::uint32_t id = std::uint32_t(nodes_.size() - 1);
  const std::size_t esize = size_of(dtype_);
  std::int64_t out_elements = y_shape.numel();
  call_ys_[0] = n.value;
  call_y_shapes_[0] = y_shape;
  for (std::size_t k = 1; k < outputs; ++k) {  // the other outputs' nodes
    Node o;
    o.op = &op;
    o.shape = y_shapes[k];
    o.requires_grad = n.requires_grad;
    o.output = std::uint8_t(k);
    o.value = arena_.allocate<std::byte>(std::size_t(o.shape.numel()) * esize);
    call_ys_[k] = o.value;
    call_y_shapes_[k] = o.shape;
    out_elements += o.shape.numel();
    nodes_.push_back(o);
  }
  dispatch(dtype_, [&](auto z) {
    using T = decltype(z);
    const auto t0 = profile_ ? Clock::now() : Clock::time_point{};
    forward_node<T>(id);  // gathers the inputs' shapes into call_shapes_
    if (profile_) profile_->add_forward(op, ns_since(t0), double((out_elements + saved) * esize));
    count_flops(op, call_shapes_.data(), int(in.size()), y_shape, attrs, n.requires_grad);
    if (profile_ && op.gemm && !op.traffic) count_operands(op, in, double(out_elements), n.requires_grad);
    if (anomaly_)
      for (std::size_t k = 0; k < outputs; ++k)
        check_finite(static_cast<const T*>(call_ys_[k]), call_y_shapes_[k], id + std::uint32_t(k), "produced");
  });
  for (std::size_t k = 0; k < outputs; ++k) out[k] = {this, id + std::uint32_t(k)};
}

template <class T>
void Tape::forward_node(std::uint32_t id) {
  const Node& n = nodes_[id];
  Shape* xs = call_shapes_.data();
  for (std::uint32_t a = 0; a < n.arity; ++a) {
    const Node& x = nodes_[inputs_[n.first_input + a]];
    xs[a] = x.shape;
    call_values_[a] = x.value;
  }
  for (std::uint32_t o = 0; o < n.outputs; ++o) {
    call_ys_[o] = nodes_[id + o].value;
    call_y_shapes_[o] = nodes_[id + o].shape;
  }
  OpCall<T> c;
  c.arity = int(n.arity);
  c.x = reinterpret_cast<const T* const*>(call_values_.data());
  c.x_shape = xs;
  c.y = static_cast<T*>(n.value);
  c.y_shape = n.shape;
  c.outputs = int(n.outputs);
  c.ys = reinterpret_cast<T* const*>(call_ys_.data());
  c.y_shapes = call_y_shapes_.data();
  c.saved = static_cast<T*>(n.saved);
  c.scratch = n.scratch_count > 0 ? static_cast<T*>(scratch(n.scratch_count)) : nullptr;
  c.attrs = n.attrs;
  n.op->forward<T>()(c);
}

// --- Recomputed chains -----------------------------------------------------------------------------------
std::uint32_t Tape::chain(int segment) {
  if (segment < 1 || segment > kMaxSegment)
    throw Error(fmt::format("chain: segment {} is outside 1..{}", segment, kMaxSegment));
  if (chain_count_ == chains_.size()) chains_.emplace_back();
  Chain& ch = chains_[chain_count_];
  ch.segment = segment;
  ch.bytes = 0;
  ch.ring.fill(nullptr);
  ch.resident.fill(0);
  ch.links.clear();
  return std::uint32_t(chain_count_++);
}

ChainLink::ChainLink(Tape& t, std::uint32_t chain) : tape_(t) {
  if (chain == kNone) return;
  if (chain >= t.chain_count_) throw Error(fmt::format("ChainLink: no chain {} on this tape in this pass", chain));
  t.pending_link_ = chain + 1;
}

// The buffer for output 0 (n, to be node id) of the op joining the pending chain: a checkpoint from the
// arena at the end of each segment, else the ring buffer of its place in the segment.
void* Tape::link_value(Node& n, std::uint32_t id, std::size_t bytes, std::span<const Var> in) {
  const std::uint32_t c = pending_link_ - 1;
  pending_link_ = 0;
  Chain& ch = chains_[c];
  if (ch.links.empty()) ch.bytes = bytes;
  if (bytes != ch.bytes)
    throw Error(fmt::format("{}: output {} joins a recomputed chain whose links are {} bytes, not {}", n.op->name,
                            n.shape.str(), ch.bytes, bytes));
  const auto k = std::uint32_t(ch.links.size());
  const int p = int(k % std::uint32_t(ch.segment));
  if (p == ch.segment - 1) {
    ch.links.push_back(id);
    return arena_.allocate<std::byte>(bytes);
  }
  for (const Var& v : in)
    if (ch.ring[p] && nodes_[v.id].value == ch.ring[p])
      throw Error(fmt::format("{}: link {} of a recomputed chain would overwrite its own input ({}); use a "
                              "longer segment than {}", n.op->name, k, describe(v.id), ch.segment));
  if (!ch.ring[p]) ch.ring[p] = arena_.allocate<std::byte>(bytes);
  ch.links.push_back(id);
  ch.resident[p] = id;
  n.chain = c + 1;
  n.link = k;
  return ch.ring[p];
}

void Tape::check_resident(std::uint32_t id, const OpDef& reader) const {
  const Node& v = nodes_[id];
  const Chain& ch = chains_[v.chain - 1];
  const std::uint32_t p = v.link % std::uint32_t(ch.segment);
  if (ch.resident[p] != id)
    throw Error(fmt::format("{}: reads link {} of a recomputed chain (segment {}) after link {} reused its "
                            "buffer; read a link within {} links of it, or use a longer segment",
                            reader.name, v.link, ch.segment, nodes_[ch.resident[p]].link, ch.segment - 1));
}

void Tape::restore(std::uint32_t id) {
  const Node& v = nodes_[id];
  Chain& ch = chains_[v.chain - 1];
  const auto S = std::uint32_t(ch.segment);
  if (ch.resident[v.link % S] == id) return;
  const auto t0 = profile_ ? Clock::now() : Clock::time_point{};
  // The segment's first link reads the checkpoint before it (or the chain's start), both in the arena.
  for (std::uint32_t k = v.link - v.link % S; k <= v.link; ++k) {
    const std::uint32_t node = ch.links[k];
    dispatch(dtype_, [&](auto z) { forward_node<decltype(z)>(node); });
    ch.resident[k % S] = node;
  }
  if (profile_) profile_->add_backward(kRecompute, ns_since(t0));
}

void Tape::restore_ring_io(std::uint32_t op_id) {
  // Latest link first: restoring it re-runs its segment up to it, which restores the earlier ones too.
  std::array<std::uint32_t, kMaxArity + 1> ids;
  std::size_t m = 0;
  if (nodes_[op_id].chain) ids[m++] = op_id;
  const Node& n = nodes_[op_id];
  for (std::uint32_t a = 0; a < n.arity; ++a)
    if (nodes_[inputs_[n.first_input + a]].chain) ids[m++] = inputs_[n.first_input + a];
  std::sort(ids.begin(), ids.begin() + std::ptrdiff_t(m), [&](std::uint32_t x, std::uint32_t y) {
    return nodes_[x].link > nodes_[y].link;
  });
  for (std::size_t k = 0; k < m; ++k) restore(ids[k]);
}

void* Tape::ensure_grad(Node& n) {
  if (n.grad_live) return n.grad;
  if (n.grad_released)
    throw Error(fmt::format("the gradient of an op node with output {} was released after backward used it; "
                            "call set_retain_grads(true) on the tape before backward to keep it",
                            n.shape.str()));
  std::memset(grad_buffer(n), 0, std::size_t(n.shape.numel()) * size_of(dtype_));
  n.grad_live = true;
  return n.grad;
}

std::vector<void*>& Tape::free_grads(const Node& n) {
  const std::size_t bytes = std::size_t(n.shape.numel()) * size_of(dtype_);
  for (FreeList& f : free_grads_)
    if (f.bytes == bytes) return f.buffers;
  return free_grads_.emplace_back(FreeList{bytes, {}}).buffers;
}

void* Tape::grad_buffer(Node& n) {
  if (n.grad) return n.grad;
  std::vector<void*>& free = free_grads(n);
  if (free.empty()) {
    n.grad = arena_.allocate<std::byte>(std::size_t(n.shape.numel()) * size_of(dtype_));
  } else {
    n.grad = free.back();
    free.pop_back();
  }
  return n.grad;
}

void Tape::release_grad(Node& n) {
  free_grads(n).push_back(n.grad);
  n.grad = nullptr;
  n.grad_live = false;
  n.grad_released = true;
}

// The GradientDeferral of a backward pass: `ids` are the inputs of the op node being run.
template <class T>
class Tape::Deferral final : public GradientDeferral<T> {
 public:
  explicit Deferral(Tape& tape) : tape_(tape) {}
  const std::uint32_t* ids = nullptr;

  bool defer(int input, const T* a, const T* b, std::int64_t rows, std::int64_t k, std::int64_t n) override {
    if (tape_.anomaly_ || !tape_.defer_) return false;
    Node& in = tape_.nodes_[ids[input]];
    if (in.deferred < 0) {
      if (tape_.deferred_count_ == tape_.deferred_.size()) tape_.deferred_.emplace_back();
      Deferred& d = tape_.deferred_[tape_.deferred_count_];
      d.node = ids[input], d.rows = 0, d.k = k, d.n = n;
      in.deferred = std::int32_t(tape_.deferred_count_++);
    }
    Deferred& d = tape_.deferred_[std::size_t(in.deferred)];
    if (d.k != k || d.n != n) return false;  // another shape of product into the same gradient: added now
    auto append = [&](std::vector<unsigned char>& buf, const T* src, std::int64_t cols) {
      const std::size_t used = std::size_t(d.rows * cols) * sizeof(T), more = std::size_t(rows * cols) * sizeof(T);
      if (buf.size() < used + more) buf.resize(2 * (used + more));  // grows in the first passes only
      std::memcpy(buf.data() + used, src, more);
    };
    append(d.a, a, k);
    append(d.b, b, n);
    d.rows += rows;
    ++tape_.deferred_products_;
    return true;
  }

 private:
  Tape& tape_;
};

template <class T>
void Tape::flush_deferred(Node& n) {
  Deferred& d = deferred_[std::size_t(n.deferred)];
  n.deferred = -1;
  if (d.rows == 0) return;
  const auto t0 = profile_ ? Clock::now() : Clock::time_point{};
  blas::gemm<T>(true, false, d.k, d.n, d.rows, T(1), reinterpret_cast<const T*>(d.a.data()), d.k,
                reinterpret_cast<const T*>(d.b.data()), d.n, T(1), static_cast<T*>(ensure_grad(n)), d.n);
  d.rows = 0;
  if (profile_) profile_->add_backward(kDeferredProducts, ns_since(t0));
}

template <class T>
void Tape::run_backward(std::uint32_t top) {
  Deferral<T> deferral(*this);
  auto xv = reinterpret_cast<const T**>(call_values_.data());
  auto gx = reinterpret_cast<T**>(call_grads_.data());
  Shape* xs = call_shapes_.data();
  for (std::int64_t k = top; k >= 0; --k) {
    Node& n = nodes_[k];
    if (!n.op || !n.requires_grad || n.output > 0) continue;  // an op's later outputs: done with the op's node
    bool live = n.grad_live;
    for (std::uint32_t o = 1; o < n.outputs; ++o) live = live || nodes_[k + o].grad_live;
    if (!live) continue;
    for (std::uint32_t o = 0; o < n.outputs; ++o)  // its gradients complete before its backward reads them
      if (nodes_[k + o].deferred >= 0) flush_deferred<T>(nodes_[k + o]);
    if (n.ring_io) restore_ring_io(std::uint32_t(k));  // before the call buffers below are filled
    const auto t0 = profile_ ? Clock::now() : Clock::time_point{};
    std::uint64_t fresh = 0;
    for (std::uint32_t a = 0; a < n.arity; ++a) {
      const std::uint32_t id = inputs_[n.first_input + a];
      Node& in = nodes_[id];
      xv[a] = static_cast<const T*>(in.value);
      xs[a] = in.shape;
      gx[a] = nullptr;
      if (!in.requires_grad) continue;
      // First contribution to this input's gradient, from an op that can assign it: skip the zeroing
      // (unless the input appears twice among this node's inputs, where the second would see garbage).
      if (n.op->assigns_fresh && !in.grad_live && !in.grad_released && !in.param &&
          std::count(inputs_.begin() + n.first_input, inputs_.begin() + n.first_input + n.arity, id) == 1) {
        gx[a] = static_cast<T*>(grad_buffer(in));
        in.grad_live = true;
        fresh |= std::uint64_t(1) << a;
      } else {
        gx[a] = static_cast<T*>(ensure_grad(in));
      }
    }
    OpCall<T> c;
    c.arity = int(n.arity);
    c.x = xv;
    c.x_shape = xs;
    c.grad_x = gx;
    c.y = static_cast<T*>(n.value);
    c.y_shape = n.shape;
    c.grad_y = static_cast<const T*>(n.grad);
    c.saved = static_cast<T*>(n.saved);
    c.scratch = n.scratch_count > 0 ? static_cast<T*>(scratch(n.scratch_count)) : nullptr;
    c.attrs = n.attrs;
    c.fresh_mask = fresh;
    deferral.ids = inputs_.data() + n.first_input;
    c.deferral = &deferral;
    if (n.outputs > 1) {  // every output's gradient, zeros for one nothing consumed
      for (std::uint32_t o = 0; o < n.outputs; ++o) {
        Node& out = nodes_[k + o];
        call_ys_[o] = out.value;
        call_y_shapes_[o] = out.shape;
        call_grad_ys_[o] = ensure_grad(out);
      }
      c.grad_y = static_cast<const T*>(n.grad);
      c.outputs = int(n.outputs);
      c.ys = reinterpret_cast<T* const*>(call_ys_.data());
      c.y_shapes = call_y_shapes_.data();
      c.grad_ys = reinterpret_cast<const T* const*>(call_grad_ys_.data());
    } else {
      c.outputs = 1;
      c.ys = &c.y;
      c.y_shapes = &n.shape;
      c.grad_ys = &c.grad_y;
    }
    if (profile_) {
      const auto t1 = Clock::now();
      profile_->add_backward(kBackwardSetup, std::chrono::duration<double, std::nano>(t1 - t0).count());
      n.op->backward<T>()(c);
      profile_->add_backward(*n.op, ns_since(t1));
    } else {
      n.op->backward<T>()(c);
    }
    if (anomaly_) {
      for (std::uint32_t a = 0; a < n.arity; ++a)
        if (gx[a]) check_finite(gx[a], xs[a], std::uint32_t(k), fmt::format("backward gave input {} a", a).c_str());
    }
    if (!retain_grads_)
      for (std::uint32_t o = 0; o < n.outputs; ++o)
        if (std::uint32_t(k) + o != top) release_grad(nodes_[k + o]);
  }
  // The leaves' (parameters'): nothing in this pass reads them.
  for (std::size_t e = 0; e < deferred_count_; ++e) {
    Node& leaf = nodes_[deferred_[e].node];
    if (leaf.deferred >= 0) flush_deferred<T>(leaf);
  }
  deferred_count_ = 0;
}

void Tape::backward(Var y) {
  if (y.tape != this) throw Error("backward: the output belongs to another tape");
  const Node& n = nodes_[y.id];
  if (n.shape.numel() != 1)
    throw ShapeError(fmt::format("backward: output {} has {} elements; give a seed gradient of that shape",
                                 n.shape.str(), n.shape.numel()));
  if (unit_seed_.shape() != n.shape || unit_seed_.dtype() != dtype_) {
    unit_seed_ = Tensor(dtype_, n.shape);
    unit_seed_.fill(1.0);
  }
  backward(y, unit_seed_);
}

void Tape::backward(Var y, const Tensor& seed) {
  if (y.tape != this) throw Error("backward: the output belongs to another tape");
  if (seed.shape() != nodes_[y.id].shape || seed.dtype() != dtype_)
    throw ShapeError(fmt::format("backward: seed {} {} does not match output {} {}", seed.shape().str(),
                                 name_of(seed.dtype()), nodes_[y.id].shape.str(), name_of(dtype_)));
  for (std::uint32_t k = 0; k <= y.id; ++k) {
    Node& n = nodes_[k];
    if (n.param) continue;
    if (n.grad && n.grad_released) n.grad = nullptr;
    n.grad_live = false;
    n.grad_released = false;
    n.deferred = -1;  // of a pass an exception ended
  }
  deferred_count_ = 0;
  deferred_products_ = 0;
  std::memcpy(ensure_grad(nodes_[y.id]), seed.raw(), seed.bytes());
  dispatch(dtype_, [&](auto z) { run_backward<decltype(z)>(y.id); });
}

void Tape::clear() {
  for (FreeList& f : free_grads_) f.buffers.clear();  // they pointed into the arena
  nodes_.clear();
  inputs_.clear();
  chain_count_ = 0;
  pending_link_ = 0;
  peak_pass_bytes_ = std::max(peak_pass_bytes_, arena_.bytes_in_use());
  arena_.reset();
  epoch_ = next_epoch++;
  flops_ = {};
}

std::string Tape::describe(std::uint32_t id) const {
  const Node& n = nodes_[id];
  if (n.param) return fmt::format("parameter {}", n.param->name);
  if (!n.op) return fmt::format("input (node {}, {})", id, n.shape.str());
  return fmt::format("op {} (node {}, output {})", n.op->name, id, n.shape.str());
}

// --- Var ---------------------------------------------------------------------------------------------------
const Shape& Var::shape() const { return tape->nodes_[id].shape; }
DType Var::dtype() const { return tape->dtype_; }
bool Var::requires_grad() const { return tape->nodes_[id].requires_grad; }

double Var::item() const {
  const Tape::Node& n = tape->nodes_[id];
  if (n.chain) tape->restore(id);
  if (n.shape.numel() != 1) throw ShapeError(fmt::format("item: {} has {} elements", n.shape.str(), n.shape.numel()));
  return tape->dtype_ == DType::f32 ? double(*static_cast<const float*>(n.value))
                                    : *static_cast<const double*>(n.value);
}

Tensor Var::value_copy() const {
  const Tape::Node& n = tape->nodes_[id];
  if (n.chain) tape->restore(id);
  Tensor t(tape->dtype_, n.shape);
  std::memcpy(t.raw(), n.value, t.bytes());
  return t;
}

Tensor Var::grad_copy() const {
  Tape::Node& n = tape->nodes_[id];
  Tensor t(tape->dtype_, n.shape);
  std::memcpy(t.raw(), tape->ensure_grad(n), t.bytes());
  return t;
}

}  // namespace matmem
