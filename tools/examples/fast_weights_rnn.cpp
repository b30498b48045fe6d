// A user's own model, defined outside the library, gradient-checked in float64 and trained with the bundled
// trainer on the associative retrieval task: a matrix fast-weights RNN (Ba et al. 2016) with a learned decay,
// written with the DSL's ops (frobenius for ⟨·,·⟩_F, layer_norm), the past states kept by the model:
//   Z_t = U_xᵀ X_t V_x + U_hᵀ H_{t−1} V_h + B,   H⁰ = ReLU(Z_t)
//   H_t = ReLU(LN(Z_t + η Σ_{τ<t} λ^{t−1−τ} ⟨H_τ, H⁰⟩_F H_τ)),   λ = σ(θ) learned, η = 0.5
//   Y_t = U_yᵀ H_t V_y + B_y
// λ^m is exp(−m·softplus(−θ)), since log σ(θ) = −softplus(−θ). The bundled `fastweights` model
// (models/fastweights/fast_weights.hpp) is this with more options.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <matmem/autodiff/gradcheck.hpp>
#include <matmem/models/registry.hpp>
#include <matmem/models/training/trainer.hpp>
#include <matmem/ops/frobenius.hpp>

using namespace matmem;

class MyFastWeights : public Model {
 public:
  MyFastWeights(const Task& task, std::int64_t rows, std::int64_t cols, DType dtype, std::uint64_t seed)
      : Model("my_fw", dtype, seed), rows_(rows), cols_(cols) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    declare_state({"h", parameter(rows, cols)});
  }

  void step(Step& s) override {
    if (s.time() == 0) past_.clear();  // a new sequence
    const Var z = s.mat("my_fw/slow", {{"x", s.input()}, {"h", s.state("h")}}, rows_, cols_);
    const Var theta = s.parameter("my_fw", "", "lambda_logit", parameter(1, 1), Init::Constant(2.0));
    const Var log_lambda = scale(softplus(scale(theta, -1.0)), -1.0);
    Var h = relu(z), fast;
    for (std::size_t k = 0; k < past_.size(); ++k) {
      const double m = double(past_.size() - 1 - k);  // τ = k, t − 1 − τ
      const Var w = scale(exp(scale(log_lambda, m)), 0.5);
      const Var term = hadamard(past_[k], hadamard(frobenius(past_[k], h), w));
      fast = fast.valid() ? add(fast, term) : term;
    }
    h = relu(layer_norm(fast.valid() ? add(z, fast) : z));
    past_.push_back(h);
    s.next("h", h);
    if (s.output_needed()) s.output(s.mat("my_fw/out", {{"h", h}}, output_rows(), output_cols()));
  }

 private:
  std::int64_t rows_, cols_;
  std::vector<Var> past_;
};

int main(int argc, char** argv) {
  register_model("my_fw", [](const Config& c, const Task& task, DType dtype, std::uint64_t seed) {
    const auto size = c.sizes("model.layers").front();
    return std::unique_ptr<Model>(new MyFastWeights(task, size.first, size.second, dtype, seed));
  });
  Config config;
  config.set("model", "my_fw", "example");
  config.set("task", "retrieval", "example");
  config.set("task.pairs", "2", "example");
  config.set("model.layers", "\"4x5\"", "example");
  config.set("batch", "32", "example");
  config.set("optimizer", "\"adam\"", "example");
  config.set("lr", "3e-3", "example");
  config.set("steps", argc > 1 ? argv[1] : "300", "example");

  // The whole model against central differences in float64, on one short batch of the task.
  auto task = make_task(config);
  MyFastWeights check(*task, 2, 3, DType::f64, 7);
  Rng rng(1);
  Sequence seq = task->sample(rng, DType::f64);
  check.build();
  std::vector<GradcheckInput> none;
  const GradcheckReport report = gradcheck(
      [&](Tape& tape, std::span<const Var>) { return Unroller(check, tape).run(seq).loss; }, none, &check.params());
  std::printf("gradcheck (float64, every parameter): %s\n", report.str().c_str());

  Trainer trainer(config);
  double first = 0, last = 0;
  while (trainer.steps_done() < trainer.steps_total()) {
    const StepStats s = trainer.step();
    if (trainer.steps_done() <= 20) first += s.loss / 20;
    if (trainer.steps_done() > trainer.steps_total() - 20) last += s.loss / 20;
    if (trainer.steps_done() % 50 == 0)
      std::printf("step %lld  loss %.4f  errors/seq %.2f\n", (long long)trainer.steps_done(), s.loss, s.bits);
  }
  const double lambda = 1 / (1 + std::exp(-trainer.model().params().at("my_fw/lambda_logit").value.get(0)));
  std::printf("my_fw: mean loss of the first 20 steps %.4f, of the last 20 %.4f; learned lambda %.3f\n", first, last,
              lambda);
  return report.passed && last < first ? EXIT_SUCCESS : EXIT_FAILURE;
}
