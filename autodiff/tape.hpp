/// @file
/// Tape: reverse-mode automatic differentiation over a flat vector of nodes.
///
/// Forward: every op call appends one Node (creation order is a topological order) and runs the op's
/// forward kernel at once, writing into buffers from the tape's Arena.
/// Backward: one reverse loop over the nodes from the output down; a node whose gradient was never
/// reached is skipped; input gradients are zeroed lazily the first time they are accumulated into, and
/// a parameter's gradient accumulates straight into the Parameter (so it survives clear()).
/// Once an op node's own backward has run, nothing reads its gradient again, so its buffer goes back to a
/// free list (by size) and the next gradient of that size reuses it: the backward pass of a long unroll
/// works in a few cache-hot gradient buffers instead of streaming a fresh one per node. Gradients of leaves
/// (inputs, parameters) are kept; set_retain_grads(true) keeps every op node's too (for inspection).
/// Nothing recurses: forward, backward and teardown are loops, so a 1000-step unroll is as safe as a short
/// one. clear() forgets every node but keeps the vectors' capacity and the arena's memory, so a training
/// loop reaches a steady state with no heap allocation per step.
///
/// Recomputed chains (checkpointing a recurrent state): see Tape::chain.
///
/// A Var is a (tape, node index) handle; it stays valid until the tape is cleared.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "matmem/autodiff/op.hpp"
#include "matmem/runtime/arena.hpp"
#include "matmem/runtime/tensor.hpp"

namespace matmem {

class Tape;
struct Parameter;
struct OpProfile;

/// A value on a tape: a (tape, node index) handle, valid until the tape is cleared. Ops take and return Vars.
struct Var {
  Tape* tape = nullptr;  ///< the tape it is on; nullptr: an invalid Var (e.g. "no bias")
  std::uint32_t id = 0;  ///< its node on the tape

  /// False for a default-constructed Var.
  bool valid() const { return tape != nullptr; }
  /// Its shape.
  const Shape& shape() const;
  /// The tape's element type.
  DType dtype() const;
  /// True when backward computes its gradient (a parameter, an input asked for one, or an op of one).
  bool requires_grad() const;
  /// Its value (a recomputed chain's value restored first); data is nullptr when T is not the tape's type.
  template <class T>
  TensorView<T> value() const;
  /// Its gradient after backward.
  template <class T>
  TensorView<T> grad() const;  ///< zeros if backward never reached it
  double item() const;         ///< the value of a one-element Var
  /// A copy of its value.
  Tensor value_copy() const;
  /// A copy of its gradient (zeros if backward never reached it).
  Tensor grad_copy() const;
};

/// The tape: records op nodes as they run forward and runs their backward in reverse (see the file).
class Tape {
 public:
  /// An empty tape computing in `dtype`: every value, gradient and parameter on it is of that type.
  explicit Tape(DType dtype = DType::f32);
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  /// The element type of everything on the tape.
  DType dtype() const { return dtype_; }

  // Leaves.
  /// A value the caller owns; the tape keeps a pointer to it until clear(), no copy. With `requires_grad`,
  /// backward computes its gradient (Var::grad).
  Var input(const Tensor& value, bool requires_grad = false);
  Var input(Tensor&& value, bool requires_grad = false) = delete;  // a temporary would dangle
  /// A float32 value the caller owns, as input(const Tensor&).
  Var input(TensorView<const float> value, bool requires_grad = false);
  /// A float64 value the caller owns, as input(const Tensor&).
  Var input(TensorView<const double> value, bool requires_grad = false);
  /// A value held by the tape: every element `fill`, no gradient (a constant of a model's formula).
  Var constant(Shape shape, double fill);
  /// A parameter: one leaf per tape, reused on later calls; its gradient accumulates into p.grad.
  Var param(Parameter& p);

  /// Records an op node, allocates its output (and `saved` elements of private storage) and runs forward;
  /// forward and backward each get `scratch` elements of temporary storage shared by all nodes.
  /// Op front-ends (ops/) check shapes first and call this.
  Var apply(const OpDef& op, std::span<const Var> inputs, Shape y_shape, OpAttrs attrs = {},
            std::int64_t saved = 0, std::int64_t scratch = 0);
  /// apply() with the inputs as a braced list: `tape->apply(kOp, {x, w}, y_shape)`.
  Var apply(const OpDef& op, std::initializer_list<Var> inputs, Shape y_shape, OpAttrs attrs = {},
            std::int64_t saved = 0, std::int64_t scratch = 0) {
    return apply(op, std::span<const Var>(inputs.begin(), inputs.size()), y_shape, attrs, saved, scratch);
  }
  /// The most outputs one op call may have.
  static constexpr std::size_t kMaxOutputs = 16;
  /// An op with several outputs (at most kMaxOutputs), written by one forward call: out[k] gets output k,
  /// each its own node (output 0 is the op's node, the others follow it). Backward runs once, after every
  /// consumer of every output, with all the outputs' gradients (OpCall::ys, grad_ys; zeros for an output
  /// nothing consumed).
  void apply(const OpDef& op, std::span<const Var> inputs, std::span<const Shape> y_shapes, std::span<Var> out,
             OpAttrs attrs = {}, std::int64_t saved = 0, std::int64_t scratch = 0);

  /// The longest segment of a recomputed chain.
  static constexpr int kMaxSegment = 16;
  /// Recomputed chains: checkpointing for a recurrent state, trading compute for memory (an NTM's memory is
  /// 270 KiB per time step at the paper's sizes and 4.3 MiB at batch 256; a long unroll keeps one per step).
  /// chain(segment) starts a chain for this pass and returns its index (for ChainLink). Inside a ChainLink
  /// scope the next op recorded becomes the chain's next link: its output 0 is a value of the state. Of
  /// every `segment` consecutive links only the last keeps its value in the arena (a checkpoint); the others
  /// write into one of segment − 1 ring buffers, which the next segment reuses. Backward, before an op that reads a ring value whose buffer has
  /// since been reused, the tape re-runs the forward of that value's segment from the checkpoint before it
  /// (an op's forward is a function of its inputs: the values come back bit for bit; the profile shows the
  /// re-runs as "(recompute)"). A link's value must be read, in forward, before its buffer is reused
  /// (segment − 1 links later); an op reading it after that, or writing over its own input, is refused.
  /// Var::value() restores a value first. segment = 1 keeps every value (a chain that changes nothing).
  std::uint32_t chain(int segment);

  /// Reverse pass from y, a one-element y (a loss), seeded with 1.
  void backward(Var y);
  /// Reverse pass from y seeded with `seed` (same shape as y): the gradients of <seed, y>.
  void backward(Var y, const Tensor& seed);

  /// Forgets every node and value; keeps the memory for the next pass.
  void clear();

  /// Saved buffers or recomputation. Once a pass of this tape has held recompute_above() bytes or more (by
  /// default kRecomputeAbove, 8 MiB: on the reference machine, writing to memory last touched 8 MiB of
  /// traffic ago already costs about twice as much as in L2, 16 MiB ago three to four times), a pass's
  /// buffers no longer stay in cache between an op's forward and its backward, and ops that can rebuild a
  /// saved buffer from their inputs with a little arithmetic (mat's Q̂ or T̂, projections' T̂: one GEMM) do
  /// so in backward instead of writing it out and reading it back from memory. Below that they save it. The
  /// results are the same bit for bit. (Measured: ntm-copy, whose passes hold up to 13 MiB, ran 0.94–0.97
  /// of its step recomputing; matrnn2-fixed (2.3 MiB) about 1.05 and matrnn-copy (4.4 MiB) about 1.08,
  /// so those save.) kRecomputeAbove is the default of recompute_above().
  static constexpr std::size_t kRecomputeAbove = std::size_t(8) << 20;
  /// True once a pass of this tape has held recompute_above() bytes or more: ops recompute in backward.
  bool recompute_saved() const { return peak_pass_bytes_ >= recompute_above_; }
  /// The bytes a pass must have held for ops to recompute rather than save.
  std::size_t recompute_above() const { return recompute_above_; }
  void set_recompute_above(std::size_t bytes) { recompute_above_ = bytes; }  ///< 0: always; SIZE_MAX: never
  std::size_t peak_pass_bytes() const { return peak_pass_bytes_; }  ///< of the passes cleared so far

  /// False inside a NoGrad scope, where new nodes record no gradient (values only).
  bool grad_enabled() const { return grad_enabled_; }
  /// Turns gradient recording on or off (NoGrad does it for a scope).
  void set_grad_enabled(bool on) { grad_enabled_ = on; }
  /// Anomaly mode: every op's output and every gradient it produces is checked for NaN/Inf; the first one
  /// found throws NumericError naming the op and node.
  bool anomaly_mode() const { return anomaly_; }
  /// Keep the gradient of every op node after backward (default: released once consumed; reading one
  /// throws). Leaves' gradients are always kept.
  bool retain_grads() const { return retain_grads_; }
  /// Turns retain_grads() on or off.
  void set_retain_grads(bool on) { retain_grads_ = on; }
  /// Turns anomaly_mode() on or off.
  void set_anomaly_mode(bool on) { anomaly_ = on; }
  /// Deferred products (GradientDeferral, autodiff/op.hpp), on by default: an op's backward may leave a term
  /// aᵀ b of an input's gradient to the tape, which adds all of that input's in one GEMM before the gradient is
  /// read. Off (or in anomaly mode), every term is added by its op at once: the per-step form, equal up to the
  /// order of the float sums.
  void set_deferred_products(bool on) { defer_ = on; }
  /// Products deferred in the last backward pass (each added later, in one GEMM per input).
  std::int64_t deferred_products() const { return deferred_products_; }
  /// Times every kernel into `profile` (nullptr detaches); see autodiff/profile.hpp.
  void set_profile(OpProfile* profile) { profile_ = profile; }

  /// A node of the tape, for introspection (gradcheck, bench, error messages).
  struct Node {
    const OpDef* op = nullptr;  ///< nullptr: a leaf
    void* value = nullptr;      ///< its value (the tape's element type)
    void* grad = nullptr;       ///< its gradient buffer, once backward has made one
    void* saved = nullptr;      ///< the op's private buffer
    Shape shape;                ///< the value's shape
    std::uint32_t first_input = 0, arity = 0;  ///< where its inputs start in the tape's input list, and how many
    std::int64_t saved_count = 0;    ///< elements of `saved`
    std::int64_t scratch_count = 0;  ///< elements of scratch its kernels use
    OpAttrs attrs;                   ///< the op's constants
    Parameter* param = nullptr;  ///< set for parameter leaves
    bool requires_grad = false;  ///< backward computes its gradient
    bool grad_live = false;      ///< grad holds a valid (possibly zero) gradient in this backward pass
    bool grad_released = false;  ///< its gradient buffer went back to the free list after its backward
    std::uint8_t outputs = 1;    ///< outputs of its op call (on output 0's node, the op node; ≤ kMaxOutputs)
    std::uint8_t output = 0;     ///< which output of its op call this node is (k > 0: node id - k is the op's)
    bool ring_io = false;        ///< op node: an input or its output 0 lives in a chain's ring buffer
    std::uint32_t chain = 0;     ///< 1 + the chain whose ring buffer holds this value (0: arena or caller's)
    std::uint32_t link = 0;      ///< with chain: its link index in the chain
    std::int32_t deferred = -1;  ///< backward: its deferred products (GradientDeferral), an index; -1: none
  };
  /// Nodes recorded since clear().
  std::size_t size() const { return nodes_.size(); }
  /// Node `id`.
  const Node& node(std::uint32_t id) const { return nodes_[id]; }
  /// The node ids of node `id`'s inputs, in order.
  std::span<const std::uint32_t> inputs_of(std::uint32_t id) const {
    const Node& n = nodes_[id];
    return {inputs_.data() + n.first_input, n.arity};
  }
  std::string describe(std::uint32_t id) const;  ///< "sharpen (node 143)" or "parameter ntm/read/key/U"
  Flops flops() const { return flops_; }         ///< total of the ops recorded since clear()
  /// The arena holding this pass's values, gradients and saved buffers.
  const Arena& arena() const { return arena_; }

 private:
  friend struct Var;
  Var leaf(void* value, Shape shape, bool requires_grad);
  Node op_node(const OpDef& op, std::span<const Var> in, const Shape& y_shape, OpAttrs attrs, std::int64_t saved,
               std::int64_t scratch_count);
  Shape* gather_inputs(const OpDef& op, std::span<const Var> in, const Shape& y_shape, OpAttrs attrs,
                       bool requires_grad);
  void count_flops(const OpDef& op, const Shape* xs, int arity, const Shape& y_shape, OpAttrs attrs,
                   bool requires_grad);
  void count_operands(const OpDef& op, std::span<const Var> in, double out_elements, bool requires_grad);
  void* ensure_grad(Node& n);
  void* grad_buffer(Node& n);  // a buffer for n's gradient (reused if one is free), not zeroed
  std::vector<void*>& free_grads(const Node& n);  // the free list of n's gradient size
  void* scratch(std::int64_t count);  // at least count elements, shared by every call
  void release_grad(Node& n);
  void* link_value(Node& n, std::uint32_t id, std::size_t bytes, std::span<const Var> in);
  void check_resident(std::uint32_t id, const OpDef& reader) const;
  void restore(std::uint32_t id);      // puts a ring value back (re-runs its segment) if its buffer was reused
  void restore_ring_io(std::uint32_t op_id);  // restore() for an op node's ring inputs and output
  template <class T>
  void forward_node(std::uint32_t id);  // runs node id's op forward on its recorded inputs
  template <class T>
  void run_backward(std::uint32_t top);
  template <class T>
  void check_finite(const T* data, const Shape& shape, std::uint32_t id, const char* what) const;
  template <class T>
  class Deferral;  // the GradientDeferral of a backward pass
  template <class T>
  void flush_deferred(Node& n);  // adds n's deferred products into its gradient, in one GEMM

  DType dtype_;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> inputs_;
  Arena arena_;
  std::uint64_t epoch_;  // identifies this tape's current pass; parameters cache their leaf by it
  std::size_t peak_pass_bytes_ = 0;
  std::size_t recompute_above_ = kRecomputeAbove;
  bool grad_enabled_ = true;
  bool anomaly_ = false;
  bool retain_grads_ = false;
  OpProfile* profile_ = nullptr;
  // Released gradient buffers by byte size (a handful of distinct sizes in practice); emptied by clear().
  struct FreeList {
    std::size_t bytes;
    std::vector<void*> buffers;
  };
  std::vector<FreeList> free_grads_;
  struct Chain {
    int segment = 1;
    std::size_t bytes = 0;                          // a link's output (the first link sets it)
    std::array<void*, kMaxSegment - 1> ring{};      // allocated from the arena by the first links
    std::array<std::uint32_t, kMaxSegment - 1> resident{};  // the node whose value each ring buffer holds
    std::vector<std::uint32_t> links;               // node ids, in order
  };
  std::vector<Chain> chains_;       // the first chain_count_ belong to this pass; kept for their capacity
  std::size_t chain_count_ = 0;
  std::uint32_t pending_link_ = 0;  // 1 + the chain the next op recorded joins (ChainLink), 0: none
  friend class ChainLink;
  Flops flops_;
  // Scratch for one op call (input shapes and pointers), sized once: no per-op initialisation cost.
  std::vector<Shape> call_shapes_;
  std::vector<const void*> call_values_;
  std::vector<void*> call_grads_;
  std::vector<void*> call_ys_;           // an op call's outputs
  std::vector<const void*> call_grad_ys_;  // and their gradients
  std::vector<Shape> call_y_shapes_;
  // Deferred products (GradientDeferral), one entry per input node that has some in this pass; the first
  // deferred_count_ are in use, the others kept with their capacity (no allocation once a pass has grown them).
  struct Deferred {
    std::uint32_t node = 0;
    std::int64_t rows = 0, k = 0, n = 0;
    std::vector<unsigned char> a, b;  // rows x k and rows x n elements of the tape's type
  };
  std::vector<Deferred> deferred_;
  std::size_t deferred_count_ = 0;
  bool defer_ = true;
  std::int64_t deferred_products_ = 0;
  Tensor unit_seed_;             // the seed of backward(y) for a one-element y
  std::vector<double> scratch_;  // grows to the largest request, never shrinks (double: aligned for both dtypes)
};

/// RAII scope in which a tape records no gradients.
class NoGrad {
 public:
  /// Turns gradients off on t until the scope ends (then restores what it was).
  explicit NoGrad(Tape& t) : tape_(t), was_(t.grad_enabled()) { t.set_grad_enabled(false); }
  ~NoGrad() { tape_.set_grad_enabled(was_); }

 private:
  Tape& tape_;
  bool was_;
};

/// Inside its scope, the next op recorded on the tape becomes the next link of a chain (Tape::chain).
class ChainLink {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t(0);  ///< a scope that changes nothing
  /// The next op recorded on t joins chain `chain` (an index from Tape::chain, or kNone).
  ChainLink(Tape& t, std::uint32_t chain);
  ~ChainLink() { tape_.pending_link_ = 0; }
  ChainLink(const ChainLink&) = delete;
  ChainLink& operator=(const ChainLink&) = delete;

 private:
  Tape& tape_;
};

template <class T>
TensorView<T> Var::value() const {
  const Tape::Node& n = tape->nodes_[id];
  if (n.chain) tape->restore(id);
  if (dtype_of<T>() != tape->dtype_) return {nullptr, n.shape};
  return {static_cast<T*>(n.value), n.shape};
}

template <class T>
TensorView<T> Var::grad() const {
  Tape::Node& n = tape->nodes_[id];
  return {static_cast<T*>(tape->ensure_grad(n)), n.shape};
}

}  // namespace matmem
