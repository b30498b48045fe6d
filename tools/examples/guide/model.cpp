// The guide's model (models/README.md, "Writing a model"): every kind of state declaration, a constant on
// the tape and per-sample scalars; then the whole model gradient-checked in float64 (autodiff/README.md).
// Built and run by the tests.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <matmem/autodiff/gradcheck.hpp>
#include <matmem/models/core/model.hpp>
#include <matmem/models/tasks/tasks.hpp>

using namespace matmem;

// guide-begin models/README.md
// A controller H with a gated cell C, reading and writing a memory M of N slots by content:
//   H_t = tanh(mat(X_t, H_{t−1}, R_{t−1})),   g_t = sigmoid(mat(H_{t−1})) ∈ [B,1]  (one scalar per sample)
//   C_t = g_t C_{t−1} + (1 − g_t) H_t,        β_t = 1 + softplus(mat(C_t)) ∈ [B,1]
//   w_t = ½ w_{t−1} + ½ softmax(β_t cos(mat(C_t), M_{t−1})),  M_t = memory_write(M_{t−1}, w_t, E_t, A_t)
//   R_t = memory_read(M_t, w_t),   Y_t = mat(H_t, R_t)
class GuideModel : public Model {
 public:
  GuideModel(const Task& task, std::int64_t rows, std::int64_t cols, std::int64_t slots, DType dtype,
             std::uint64_t seed)
      : Model("guide", dtype, seed), rows_(rows), cols_(cols) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    // Per-sample shapes (batch 1); the Unroller gives each a batch of B equal copies at t = 0.
    declare_state({.name = "h", .shape = parameter(rows, cols)});  // zero
    declare_state({.name = "c", .shape = parameter(rows, cols), .start = StateDecl::constant, .value = 0.5});
    declare_state({.name = "r", .shape = parameter(rows, cols), .start = StateDecl::learned,
                   .learned_init = Init::Normal(0, 0.1)});  // parameter guide/init/r
    StateDecl w{.name = "w", .shape = weighting(1, slots), .start = StateDecl::given};
    w.initial = Tensor(dtype, w.shape);  // given: this tensor, all weight on slot 0
    w.initial.set(0, 1.0);
    declare_state(std::move(w));
    // Memory-shaped: [N,r,c] per sample. Not zero: content addressing needs a norm (see "Known traps").
    declare_state({.name = "M", .shape = memory(1, slots, rows, cols), .start = StateDecl::constant,
                   .value = 1e-3});
  }

  void step(Step& s) override {
    const Var h = s.state("h"), c = s.state("c"), r = s.state("r"), w = s.state("w"), m = s.state("M");
    const Var h_next = tanh(s.mat("guide/cell", {{"x", s.input()}, {"h", h}, {"r", r}}, rows_, cols_));
    // A per-sample scalar: a 1x1 mat gives [B,1,1], and an elementwise op broadcasts it over a matrix.
    const Var g = sigmoid(s.mat("guide/gate", {{"h", h}}, 1, 1));
    const Var c_next = add(hadamard(g, c), hadamard(one_minus(g), h_next));
    // A constant on the tape: every element 1, one per sample ([B,1,1]); the tape holds it, no gradient.
    const Var one = s.tape().constant(scalars(s.batch()), 1.0);
    const Var beta = add(one, softplus(s.mat("guide/beta", {{"c", c_next}}, 1, 1)));
    const Var key = s.mat("guide/key", {{"c", c_next}}, rows_, cols_);
    const Var content = softmax(hadamard(beta, cosine_similarity(key, m)));  // [B,N]: β scales each sample's row
    const Var w_next = add(scale(w, 0.5), scale(content, 0.5));
    const Var erase = sigmoid(s.mat("guide/erase", {{"c", c_next}}, rows_, cols_));
    const Var added = tanh(s.mat("guide/add", {{"c", c_next}}, rows_, cols_));
    const Var m_next = memory_write(m, w_next, erase, added);
    const Var r_next = memory_read(m_next, w_next);
    s.next("h", h_next);
    s.next("c", c_next);
    s.next("r", r_next);
    s.next("w", w_next);
    s.next("M", m_next);
    if (s.output_needed()) s.output(s.mat("guide/out", {{"h", h_next}, {"r", r_next}}, output_rows(), output_cols()));
  }

 private:
  std::int64_t rows_, cols_;
};
// guide-end

int main() {
  CopyTask task({.rows = 3, .cols = 3, .min_length = 2, .max_length = 3, .batch = 2});
  // guide-begin autodiff/README.md
  // The whole model in float64 against central differences, on one batch of its task.
  GuideModel model(task, 3, 4, 5, DType::f64, /*seed=*/7);
  Rng rng(1);
  const Sequence seq = task.sample(rng, DType::f64);
  model.build();  // creates the parameters gradcheck perturbs
  std::vector<GradcheckInput> inputs;  // none: the sequence is data, the parameters are what is checked
  const GradcheckReport report = gradcheck(
      [&](Tape& tape, std::span<const Var>) { return Unroller(model, tape).run(seq).loss; }, inputs, &model.params());
  std::printf("gradcheck (float64, every parameter): %s\n", report.str().c_str());
  // guide-end
  return report.passed ? EXIT_SUCCESS : EXIT_FAILURE;
}
