// A plugin whose two models differ only in the backward of one op, for `matmem gradcheck --model`:
//
//   H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + B),  H_0 learned,   Y_t = U_yᵀ S(H_t) V_y + B_y
//
// with S the elementwise square, y = x², in op test_square (dy/dx = 2x) in model test_square_rnn, and in op
// test_wrong_square (whose backward gives 3x) in model test_wrong_square_rnn. The state is 3×3.
//
// And the accumulation bug: op test_assigning_square, registered (so `gradcheck --op` and `--all` check it),
// whose backward assigns its gradient (grad_x = 2x g) instead of adding to it; right wherever its input has one
// use, wrong where it has two. Model test_assigning_square_rnn feeds H_t to it twice: S(H_t) + S(H_t).
#include <matmem/models/plugin.hpp>
#include <matmem/models/registry.hpp>
#include <matmem/ops/ops.hpp>
#include <matmem/ops/registry.hpp>

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

template <class T>
struct AssigningSquare {
  static void forward(const OpCall<T>& c) { RightSquare<T>::forward(c); }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.grad_x[0][k] = c.grad_y[k] * T(2) * c.x[0][k];
  }
};
constexpr OpDef kAssigningSquare = make_op<AssigningSquare>("test_assigning_square");
Var assigning_square(Var x) { return x.tape->apply(kAssigningSquare, {x}, x.shape()); }

class SquareRNN : public Model {
 public:
  // twice: the output reads S(H_t) + S(H_t), H_t feeding the square twice.
  SquareRNN(const Task& task, const OpDef& square, DType dtype, std::uint64_t seed, bool twice = false)
      : Model("square_rnn", dtype, seed), square_(square), twice_(twice) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    StateDecl h{"h", parameter(3, 3)};
    h.start = StateDecl::learned;
    declare_state(h);
  }

  void step(Step& s) override {
    Var h = tanh(s.mat("square_rnn/cell", {{"x", s.input()}, {"h", s.state("h")}}, 3, 3));
    s.next("h", h);
    Var squared = h.tape->apply(square_, {h}, h.shape());
    if (twice_) squared = add(squared, h.tape->apply(square_, {h}, h.shape()));
    if (s.output_needed()) s.output(s.mat("square_rnn/out", {{"h", squared}}, output_rows(), output_cols()));
  }

 private:
  const OpDef& square_;
  bool twice_;
};

void register_gradient_plugin() {
  register_model("test_square_rnn", [](const Config&, const Task& task, DType dtype, std::uint64_t seed) {
    return std::unique_ptr<Model>(new SquareRNN(task, kSquare, dtype, seed));
  });
  register_model("test_wrong_square_rnn", [](const Config&, const Task& task, DType dtype, std::uint64_t seed) {
    return std::unique_ptr<Model>(new SquareRNN(task, kWrongSquare, dtype, seed));
  });
  register_model("test_assigning_square_rnn", [](const Config&, const Task& task, DType dtype, std::uint64_t seed) {
    return std::unique_ptr<Model>(new SquareRNN(task, kAssigningSquare, dtype, seed, true));
  });
  register_op({"test_assigning_square", [](Rng& rng, SampleSize size) {
                 return unary_sample(rng, size, &assigning_square, -1, 1);
               }});
}
}  // namespace

MATMEM_PLUGIN(register_gradient_plugin)
