// A plugin as a user writes one: a model, the config key it reads, and an op, registered by one function.
//
// Model test_plugin_rnn, a matrix RNN with an n×n state (n = config key test_plugin.size):
//   H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + B),   Y_t = U_yᵀ H_t V_y + B_y
// Op test_plugin_cube: y = x³, dy/dx = 3x².   x:[any] -> same shape
#include <matmem/models/plugin.hpp>
#include <matmem/models/registry.hpp>
#include <matmem/ops/ops.hpp>
#include <matmem/ops/registry.hpp>

using namespace matmem;

namespace {
class TestPluginRNN : public Model {
 public:
  TestPluginRNN(const Task& task, std::int64_t n, std::uint64_t seed) : Model("test_plugin_rnn", DType::f32, seed), n_(n) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    declare_state({"h", parameter(n, n)});
  }

  void step(Step& s) override {
    Var h = tanh(s.mat("test_plugin_rnn/cell", {{"x", s.input()}, {"h", s.state("h")}}, n_, n_));
    s.next("h", h);
    if (s.output_needed()) s.output(s.mat("test_plugin_rnn/out", {{"h", h}}, output_rows(), output_cols()));
  }

 private:
  std::int64_t n_;
};

template <class T>
struct CubeKernel {
  static void forward(const OpCall<T>& c) {
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.y[k] = c.x[0][k] * c.x[0][k] * c.x[0][k];
  }
  static void backward(const OpCall<T>& c) {
    if (!c.grad_x[0]) return;
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.grad_x[0][k] += c.grad_y[k] * T(3) * c.x[0][k] * c.x[0][k];
  }
};
constexpr OpDef kCube = make_op<CubeKernel>("test_plugin_cube");

Var cube(Var x) { return x.tape->apply(kCube, {x}, x.shape()); }

void register_test_plugin() {
  register_config_key({"test_plugin.size", "6", "test_plugin_rnn: rows and columns of the state"});
  register_model("test_plugin_rnn", [](const Config& c, const Task& task, DType, std::uint64_t seed) {
    return std::unique_ptr<Model>(new TestPluginRNN(task, c.integer("test_plugin.size"), seed));
  });
  register_op({"test_plugin_cube", [](Rng& rng, SampleSize size) { return unary_sample(rng, size, &cube, -2.0, 2.0); }});
}
}  // namespace

MATMEM_PLUGIN(register_test_plugin)
