// The guide's known trap (models/README.md, "Known traps"): content addressing by a key computed from a zero
// state. At t = 0 the key is mat(H_0) = B, and B starts at 0: cos(K, M_i) has no derivative at K = 0, and the
// tape's gradient there (g M_i / ε, ε = 1e-8) is not the function's. gradcheck fails on it; the same model
// started from a non-zero state passes. Built and run by the tests: it fails unless exactly that happens.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <matmem/autodiff/gradcheck.hpp>
#include <matmem/models/core/model.hpp>
#include <matmem/models/tasks/tasks.hpp>

using namespace matmem;

class ContentReader : public Model {
 public:
  ContentReader(const Task& task, bool zero_start, DType dtype, std::uint64_t seed)
      : Model("reader", dtype, seed) {
    set_io(task.input_rows(), task.input_cols(), task.output_rows(), task.output_cols());
    // guide-begin models/README.md
    StateDecl h{.name = "h", .shape = parameter(3, 3)};  // zero: the key mat(h) is exactly 0 at t = 0
    if (!zero_start) {
      h.start = StateDecl::constant;  // the fix: a non-zero start (constant, learned or given)
      h.value = 0.5;
    }
    // guide-end
    declare_state(std::move(h));
    StateDecl m{.name = "M", .shape = memory(1, 4, 3, 3), .start = StateDecl::given};
    m.initial = Tensor(dtype, m.shape);
    Rng rng(seed);
    for (std::int64_t k = 0; k < m.initial.numel(); ++k) m.initial.set(k, rng.normal());
    declare_state(std::move(m));
  }

  void step(Step& s) override {
    const Var h = s.state("h"), m = s.state("M");
    const Var w = softmax(cosine_similarity(s.mat("reader/key", {{"h", h}}, 3, 3), m));
    const Var h_next = tanh(s.mat("reader/cell", {{"x", s.input()}, {"h", h}, {"r", memory_read(m, w)}}, 3, 3));
    s.next("h", h_next);
    if (s.output_needed()) s.output(s.mat("reader/out", {{"h", h_next}}, output_rows(), output_cols()));
  }
};

GradcheckReport check(const Task& task, bool zero_start) {
  ContentReader model(task, zero_start, DType::f64, 3);
  Rng rng(1);
  const Sequence seq = task.sample(rng, DType::f64);
  model.build();
  std::vector<GradcheckInput> inputs;
  GradcheckOptions options;
  options.locate_op = false;
  return gradcheck([&](Tape& tape, std::span<const Var>) { return Unroller(model, tape).run(seq).loss; }, inputs,
                   &model.params(), options);
}

int main() {
  CopyTask task({.rows = 3, .cols = 3, .min_length = 2, .max_length = 2, .batch = 2});
  const GradcheckReport zero = check(task, true), nonzero = check(task, false);
  std::printf("from a zero state: %s\nfrom a non-zero state: %s\n", zero.str().c_str(), nonzero.str().c_str());
  return !zero.passed && nonzero.passed ? EXIT_SUCCESS : EXIT_FAILURE;
}
