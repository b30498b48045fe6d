// matrix_square (matrix_square.hpp): forward and backward for float and double, the shape check, the registry
// entry with the op's own sample shapes.
#include "matrix_square.hpp"

#include <matmem/runtime/error.hpp>

using namespace matmem;

namespace mine {
namespace {

// TensorView::at indexes logically, whatever the batch layout (runtime/shape.hpp). Backward accumulates (+=).
template <class T>
struct MatrixSquareKernel {
  static void forward(const OpCall<T>& c) {
    const TensorView<const T> x = c.in(0);
    const TensorView<T> y = c.out();
    const std::int64_t n = x.shape.rows;
    for (std::int64_t b = 0; b < x.shape.batch; ++b)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          T s = 0;
          for (std::int64_t k = 0; k < n; ++k) s += x.at(b, i, k) * x.at(b, k, j);
          y.at(b, i, j) = s;
        }
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    const TensorView<const T> x = c.in(0), grad_y{c.grad_y, c.y_shape};
    const TensorView<T> grad_x{c.grad_x[0], c.x_shape[0]};
    const std::int64_t n = x.shape.rows;
    for (std::int64_t b = 0; b < x.shape.batch; ++b)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t k = 0; k < n; ++k) {
          T s = 0;  // (grad_y xᵀ)_ik + (xᵀ grad_y)_ik
          for (std::int64_t j = 0; j < n; ++j)
            s += grad_y.at(b, i, j) * x.at(b, k, j) + x.at(b, j, i) * grad_y.at(b, j, k);
          grad_x.at(b, i, k) += s;
        }
  }
};

// 2Bn³ multiply-adds forward, twice that backward (for `matmem bench ops`).
Flops matrix_square_flops(const Shape* x, int, const Shape&, const OpAttrs&) {
  const double n = double(x[0].rows), work = 2.0 * double(x[0].batch) * n * n * n;
  return {work, 2 * work};
}

constexpr OpDef kMatrixSquare = make_op<MatrixSquareKernel>("matrix_square", &matrix_square_flops);

}  // namespace

Var matrix_square(Var x) {
  const Shape& s = x.shape();
  if (s.slots != 1 || s.rows != s.cols)
    throw ShapeError("matrix_square: " + s.str() + ": each sample must be one square matrix [B,n,n]");
  return x.tape->apply(kMatrixSquare, {x}, s);
}

OpEntry matrix_square_entry() {
  return {"matrix_square", [](Rng& rng, SampleSize size) {
            // Its own shapes: n and the batch per size (odd n for the loops' tails; 19 lanes; the paper's 15×15).
            const std::int64_t n[] = {3, 17, 4, 15}, batch[] = {2, 3, 19, 16};
            const int k = int(size);
            OpSample sample;
            sample.inputs = {{"x", random_tensor(rng, matrices(batch[k], n[k], n[k]))}};
            sample.apply = [](Tape&, std::span<const Var> v) { return matrix_square(v[0]); };
            return sample;
          }};
}

}  // namespace mine
