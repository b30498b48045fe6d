// A user's own model, defined outside the library and trained with the bundled trainer and tasks:
// a Matrix RNN whose state also reads a gamma memory of its past states (de Vries & Principe):
//   G_t = (1 − μ) G_{t−1} + μ H_{t−1},  μ = sigmoid(θ), θ learned
//   H_t = tanh(U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + U_gᵀ G_t V_g + B),   Y_t = U_yᵀ H_t V_y + B_y
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <matmem/models/registry.hpp>
#include <matmem/models/training/trainer.hpp>

using namespace matmem;

class GammaRNN : public Model {
 public:
  GammaRNN(const Task& task, std::int64_t rows, std::int64_t cols, std::uint64_t seed)
      : Model("gamma_rnn", DType::f32, seed), rows_(rows), cols_(cols) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    declare_state({"h", parameter(rows, cols)});
    declare_state({"g", parameter(rows, cols)});
  }

  void step(Step& s) override {
    Var h = s.state("h"), g = s.state("g");
    Var mu = sigmoid(s.parameter("gamma_rnn", "", "theta", parameter(1, 1), Init::Constant(-1.0)));
    Var g_next = add(hadamard(one_minus(mu), g), hadamard(mu, h));
    Var h_next = tanh(s.mat("gamma_rnn/cell", {{"x", s.input()}, {"h", h}, {"g", g_next}}, rows_, cols_));
    s.next("h", h_next);
    s.next("g", g_next);
    if (s.output_needed()) s.output(s.mat("gamma_rnn/out", {{"h", h_next}}, output_rows(), output_cols()));
  }

 private:
  std::int64_t rows_, cols_;
};

int main(int argc, char** argv) {
  register_model("gamma_rnn", [](const Config& c, const Task& task, DType, std::uint64_t seed) {
    const auto size = c.sizes("model.layers").front();
    return std::unique_ptr<Model>(new GammaRNN(task, size.first, size.second, seed));
  });
  Config config;
  config.set("model", "gamma_rnn", "example");
  config.set("task", "copy", "example");
  config.set("model.layers", "\"12x12\"", "example");
  config.set("task.max_length", "5", "example");
  config.set("lr", "3e-3", "example");
  config.set("steps", argc > 1 ? argv[1] : "300", "example");
  Trainer trainer(config);
  double first = 0, last = 0;
  while (trainer.steps_done() < trainer.steps_total()) {
    const StepStats s = trainer.step();
    if (trainer.steps_done() <= 20) first += s.loss / 20;
    if (trainer.steps_done() > trainer.steps_total() - 20) last += s.loss / 20;
    if (trainer.steps_done() % 50 == 0)
      std::printf("step %lld  loss %.4f  bits/seq %.2f\n", (long long)trainer.steps_done(), s.loss, s.bits);
  }
  const double mu = 1 / (1 + std::exp(-trainer.model().params().at("gamma_rnn/theta").value.get(0)));
  std::printf("gamma_rnn: mean loss of the first 20 steps %.4f, of the last 20 %.4f; learned mu %.3f\n", first, last, mu);
  return last < first ? EXIT_SUCCESS : EXIT_FAILURE;
}
