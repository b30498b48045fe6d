// A plugin whose two models differ only in the backward of one op, for `matmem gradcheck --model`:
//
//   H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + B),  H_0 learned,   Y_t = U_yᵀ S(H_t) V_y + B_y
//
// with S the elementwise square, y = x², in op test_square (dy/dx = 2x) in model test_square_rnn, and in op
// test_wrong_square (whose backward gives 3x) in model test_wrong_square_rnn. The state is 3×3.
#include <matmem/models/plugin.hpp>
#include <matmem/models/registry.hpp>
#include <matmem/ops/ops.hpp>

using namespace matmem;

namespace {
template <class T, int Factor>
struct SquareKernel {
  static void forward(const OpCall<T>& c) {
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.y[k] = c.x[0][k] * c.x[0][k];
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.grad_x[0][k] += c.grad_y[k] * T(Factor) * c.x[0][k];
  }
};
template <class T>
using RightSquare = SquareKernel<T, 2>;
template <class T>
using WrongSquare = SquareKernel<T, 3>;
constexpr OpDef kSquare = make_op<RightSquare>("test_square");
constexpr OpDef kWrongSquare = make_op<WrongSquare>("test_wrong_square");

class SquareRNN : public Model {
 public:
  SquareRNN(const Task& task, const OpDef& square, DType dtype, std::uint64_t seed)
      : Model("square_rnn", dtype, seed), square_(square) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    StateDecl h{"h", parameter(3, 3)};
    h.start = StateDecl::learned;
    declare_state(h);
  }

  void step(Step& s) override {
    Var h = tanh(s.mat("square_rnn/cell", {{"x", s.input()}, {"h", s.state("h")}}, 3, 3));
    s.next("h", h);
    Var squared = h.tape->apply(square_, {h}, h.shape());
    if (s.output_needed()) s.output(s.mat("square_rnn/out", {{"h", squared}}, output_rows(), output_cols()));
  }

 private:
  const OpDef& square_;
};

void register_gradient_plugin() {
  register_model("test_square_rnn", [](const Config&, const Task& task, DType dtype, std::uint64_t seed) {
    return std::unique_ptr<Model>(new SquareRNN(task, kSquare, dtype, seed));
  });
  register_model("test_wrong_square_rnn", [](const Config&, const Task& task, DType dtype, std::uint64_t seed) {
    return std::unique_ptr<Model>(new SquareRNN(task, kWrongSquare, dtype, seed));
  });
}
}  // namespace

MATMEM_PLUGIN(register_gradient_plugin)
