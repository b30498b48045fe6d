/// @file
/// The contract between the tape and an op (spec/style.md: "fixed backward contract").
///
/// An op is a pair of kernels over typed views, written once as a template and instantiated for float and
/// double by make_op<Kernel>():
///
///     template <class T> struct MyKernel {
///       static void forward(const OpCall<T>& c);   // reads c.x[k], writes c.y (and c.saved)
///       static void backward(const OpCall<T>& c);  // reads c.x, c.y, c.grad_y, c.saved;
///     };                                           // accumulates (+=, never =) into every c.grad_x[k] != nullptr
///
/// An op made with make_op<K>(name, flops, /*assigns_fresh=*/true) may instead be handed an uninitialised
/// gradient buffer when it is the first to contribute to that input in a backward pass (c.fresh(k)); it
/// must then assign (=) every element of grad_x[k]. That saves zeroing the buffer and reading it back,
/// which for a memory-sized gradient is a whole pass over the memory.
///
/// An op with several outputs (Tape::apply with a list of output shapes) writes c.ys[k] in forward and reads
/// every c.grad_ys[k] in backward; c.y and c.grad_y are output 0's.
///
/// backward gets the inputs, the output, the upstream gradient and, through grad_x[k] == nullptr, which
/// inputs need no gradient. The tape sizes every buffer from the shapes it was given, so kernels never
/// allocate: `saved` is the node's own (kept from forward to backward), `scratch` a temporary shared by all
/// calls (its contents are undefined on entry and dead on return; it takes no memory per node).
#pragma once
#include <cstdint>

#include "matmem/runtime/dtype.hpp"
#include "matmem/runtime/shape.hpp"
#include "matmem/runtime/tensor.hpp"

namespace matmem {

/// Small per-node constants (shift width, epsilon, a scale factor, ...). Plain data: nodes stay flat.
struct OpAttrs {
  double f[2] = {0, 0};        ///< real constants, as the op defines them
  std::int64_t i[2] = {0, 0};  ///< integer constants, as the op defines them
};

/// Where backward may leave a product aᵀ b that belongs to an input's gradient: the tape adds every such
/// product of that input in one GEMM over their rows stacked, Σ_t a_tᵀ b_t = [a_1; …; a_T]ᵀ [b_1; …; b_T], just
/// before anything reads the gradient (after the last op that uses the input, or at the end of the pass for a
/// parameter). A weight used at every time step then has its gradient read and written once a backward pass
/// instead of once a time step (at batch 1 each step's term is an outer product as large as the weight).
template <class T>
class GradientDeferral {
 public:
  /// Takes grad_x[input] (k x n) += aᵀ b, a: rows x k, b: rows x n, row-major (copied now). False: not taken
  /// (anomaly mode, which names the op of a non-finite gradient), and the caller adds the product itself.
  virtual bool defer(int input, const T* a, const T* b, std::int64_t rows, std::int64_t k, std::int64_t n) = 0;

 protected:
  ~GradientDeferral() = default;
};

/// What a kernel gets: its inputs and output, their gradients and its buffers, for one node (see the file).
template <class T>
struct OpCall {
  int arity = 0;                   ///< number of inputs
  const T* const* x = nullptr;     ///< input values
  const Shape* x_shape = nullptr;  ///< input shapes
  T* const* grad_x = nullptr;      ///< where to accumulate each input's gradient, or nullptr
  T* y = nullptr;                  ///< output value (written by forward, read by backward)
  Shape y_shape;                   ///< output shape
  const T* grad_y = nullptr;       ///< upstream gradient, backward only
  T* saved = nullptr;              ///< op-private buffer written by forward for backward
  T* scratch = nullptr;            ///< temporary for this call only
  OpAttrs attrs;                   ///< the node's constants
  std::uint64_t fresh_mask = 0;    ///< bit k: grad_x[k] is uninitialised, assign it (ops made assigns_fresh)
  /// Every output of an op with several (Tape::apply with y_shapes): ys[0] == y, grad_ys[0] == grad_y.
  int outputs = 1;
  T* const* ys = nullptr;             ///< output values
  const Shape* y_shapes = nullptr;    ///< output shapes
  const T* const* grad_ys = nullptr;  ///< upstream gradients of the outputs, backward only
  GradientDeferral<T>* deferral = nullptr;  ///< backward only, on a tape: takes products for later (nullptr: none)

  /// True when grad_x[k] is uninitialised and backward must assign (=) it.
  bool fresh(int k) const { return (fresh_mask >> k) & 1; }

  /// Input k as a view.
  TensorView<const T> in(int k) const { return {x[k], x_shape[k]}; }
  /// The output (0) as a view.
  TensorView<T> out() const { return {y, y_shape}; }
};

/// A forward or backward kernel for element type T.
template <class T>
using Kernel = void (*)(const OpCall<T>&);

/// Floating-point operations of one forward and one backward (for the bench's GFLOP/s).
struct Flops {
  double forward = 0, backward = 0;  ///< FLOPs of the forward, and of the backward
  /// forward + backward.
  double total() const { return forward + backward; }
};
/// An op's FLOPs for given input shapes, output shape and constants.
using FlopsFn = Flops (*)(const Shape* x_shape, int arity, const Shape& y_shape, const OpAttrs& attrs);

/// The values (floats or doubles) one forward and one backward must read or write at least, for an op whose
/// speed memory traffic sets: the memory ops, each pass of which streams whole memory states. The bench sets
/// their time against the core's streaming rate (`matmem bench train --profile`, its "limit" column).
struct Traffic {
  double forward = 0, backward = 0;  ///< values moved by the forward, and by the backward
};
/// An op's Traffic for given input shapes, output shape and constants.
using TrafficFn = Traffic (*)(const Shape* x_shape, int arity, const Shape& y_shape, const OpAttrs& attrs);

/// An op: its name and its kernels for float and double (make_op builds one), with what the bench needs.
struct OpDef {
  const char* name;                          ///< as the profile, errors and the registry name it
  Kernel<float> forward_f32, backward_f32;   ///< the float32 kernels
  Kernel<double> forward_f64, backward_f64;  ///< the float64 kernels
  FlopsFn flops = nullptr;                   ///< its FLOPs (nullptr: not counted)
  bool assigns_fresh = false;  ///< backward honours OpCall::fresh (see above)
  TrafficFn traffic = nullptr;  ///< declared by the memory ops (see Traffic)
  bool gemm = false;            ///< its FLOPs are matrix products: the bench sets them against the SGEMM peak

  /// The forward kernel for T.
  template <class T>
  Kernel<T> forward() const {
    if constexpr (sizeof(T) == 4) return forward_f32; else return forward_f64;
  }
  /// The backward kernel for T.
  template <class T>
  Kernel<T> backward() const {
    if constexpr (sizeof(T) == 4) return backward_f32; else return backward_f64;
  }
};

/// The op of kernel template K (K<T>::forward, K<T>::backward, for T = float and double); `assigns_fresh`:
/// K's backward honours OpCall::fresh.
template <template <class> class K>
constexpr OpDef make_op(const char* name, FlopsFn flops = nullptr, bool assigns_fresh = false) {
  return {name, &K<float>::forward, &K<float>::backward, &K<double>::forward, &K<double>::backward, flops,
          assigns_fresh};
}
/// The same op with its traffic declared (only informs the bench).
constexpr OpDef with_traffic(OpDef op, TrafficFn traffic) {
  op.traffic = traffic;
  return op;
}
/// The same op marked as made of matrix products (only informs the bench).
constexpr OpDef as_gemm(OpDef op) {
  op.gemm = true;
  return op;
}

}  // namespace matmem
