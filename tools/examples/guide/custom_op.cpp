// The guide's non-elementwise op (ops/README.md, "Writing an op"): its own sample shapes, its elements
// indexed with Shape::offset, and a ShapeError naming the op and the shapes. Built and run by the tests.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <matmem/ops/ops.hpp>
#include <matmem/ops/registry.hpp>
#include <matmem/runtime/error.hpp>

using namespace matmem;

// guide-begin ops/README.md
// row_read(X, w): a weighted sum of the rows of each sample's matrix.
//   y_bj = Σ_i w_bi X_bij.   X:[B,r,c], w:[B,1,r] (a weighting over the rows) -> [B,1,c]
//   grad_X_bij += w_bi g_bj,   grad_w_bi += Σ_j X_bij g_bj
template <class T>
struct RowReadKernel {
  static void forward(const OpCall<T>& c) {
    const Shape &xs = c.x_shape[0], &ws = c.x_shape[1], &ys = c.y_shape;
    for (std::int64_t b = 0; b < ys.batch; ++b)
      for (std::int64_t j = 0; j < ys.cols; ++j) {
        T sum = 0;
        for (std::int64_t i = 0; i < xs.rows; ++i) sum += c.x[1][ws.offset(b, 0, 0, i)] * c.x[0][xs.offset(b, 0, i, j)];
        c.y[ys.offset(b, 0, 0, j)] = sum;
      }
  }
  static void backward(const OpCall<T>& c) {
    const Shape &xs = c.x_shape[0], &ws = c.x_shape[1], &ys = c.y_shape;
    for (std::int64_t b = 0; b < ys.batch; ++b)
      for (std::int64_t i = 0; i < xs.rows; ++i)
        for (std::int64_t j = 0; j < ys.cols; ++j) {
          const T g = c.grad_y[ys.offset(b, 0, 0, j)];
          if (c.grad_x[0]) c.grad_x[0][xs.offset(b, 0, i, j)] += c.x[1][ws.offset(b, 0, 0, i)] * g;
          if (c.grad_x[1]) c.grad_x[1][ws.offset(b, 0, 0, i)] += c.x[0][xs.offset(b, 0, i, j)] * g;
        }
  }
};
constexpr OpDef kRowRead = make_op<RowReadKernel>("row_read");

Var row_read(Var x, Var w) {
  const Shape &xs = x.shape(), &ws = w.shape();
  if (xs.slots != 1 || ws.slots != 1 || ws.rows != 1 || ws.cols != xs.rows || ws.batch != xs.batch)
    throw ShapeError("row_read: X " + xs.str() + " and w " + ws.str() + " do not fit; wants X:[B,r,c], w:[B,1,r]");
  return x.tape->apply(kRowRead, {x, w}, matrices(xs.batch, 1, xs.cols));
}

// Sample inputs of its own shapes: r ≠ c and a batch > 1, so that a swapped index cannot pass.
OpEntry row_read_entry{"row_read", [](Rng& rng, SampleSize) {
  OpSample s;
  s.inputs = {{"X", random_tensor(rng, matrices(3, 4, 5))}, {"w", random_tensor(rng, matrices(3, 1, 4), 0.0, 1.0)}};
  s.apply = [](Tape&, std::span<const Var> v) { return row_read(v[0], v[1]); };
  return s;
}};
// guide-end

int main() {
  const GradcheckReport report = gradcheck_op(row_read_entry);
  std::printf("row_read: %s\n", report.str().c_str());
  Tape tape(DType::f64);
  const Tensor x(DType::f64, matrices(2, 4, 5)), w(DType::f64, matrices(2, 1, 3));
  try {
    row_read(tape.input(x), tape.input(w));
    std::printf("row_read: mismatched shapes were accepted\n");
    return EXIT_FAILURE;
  } catch (const ShapeError& e) {
    std::printf("%s\n", e.what());
    const std::string message = e.what();
    if (message.find("row_read") == std::string::npos || message.find("[2,4,5]") == std::string::npos ||
        message.find("[2,1,3]") == std::string::npos)
      return EXIT_FAILURE;
  }
  return report.passed ? EXIT_SUCCESS : EXIT_FAILURE;
}
