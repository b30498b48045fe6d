// Gradient checks in float64, before training anything: the op matrix_square on its sample inputs, its
// refusal of a non-square matrix, and the whole MemoryRNN unrolled over a short copy sequence (every
// parameter, the learned starts H_0 and M_0 included). Prints one line per check; exits 1 if one fails.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <matmem/autodiff/gradcheck.hpp>
#include <matmem/models/registry.hpp>
#include <matmem/ops/registry.hpp>
#include <matmem/runtime/error.hpp>

#include "matrix_square.hpp"
#include "memory_rnn.hpp"

using namespace matmem;

static bool report(const char* what, const GradcheckReport& r) {
  std::printf("%-52s %s\n", what, r.str().c_str());
  return r.passed;
}

int main() {
  bool ok = true;

  // 1. The op: its full Jacobian at the small size, every element at the large one, and with two consumers of
  //    each input (backward must add into the gradient, not assign it).
  const OpEntry entry = mine::matrix_square_entry();
  ok &= report("matrix_square (small, full Jacobian)", gradcheck_op(entry, SampleSize::small));
  ok &= report("matrix_square (large)", gradcheck_op(entry, SampleSize::large));
  ok &= report("matrix_square (applied twice)", gradcheck_op(entry, SampleSize::small, 1234, Uses::twice));

  // 2. A non-square matrix is refused, naming the op and the shape.
  Tape tape(DType::f64);
  const Tensor wide(DType::f64, matrices(2, 3, 4));
  try {
    mine::matrix_square(tape.input(wide));
    std::printf("matrix_square [2,3,4]: not refused\n");
    ok = false;
  } catch (const ShapeError& e) {
    std::printf("matrix_square [2,3,4] refused: %s\n", e.what());
  }

  // 3. The model over a copy sequence of two 2×3 matrices (5 steps), batch 2: H 3×3, 4 slots of 2×3.
  Config config;
  config.set("task", "copy", "check");
  config.set("task.rows", "2", "check");
  config.set("task.cols", "3", "check");
  config.set("task.min_length", "2", "check");
  config.set("task.max_length", "2", "check");
  config.set("batch", "2", "check");
  const auto task = make_task(config);
  mine::MemoryRNN model(*task, parameter(3, 3), memory(1, 4, 2, 3), DType::f64, 7);
  model.build();
  Rng rng(5);
  const Sequence seq = task->sample(rng, DType::f64);
  std::vector<GradcheckInput> none;
  const auto loss = [&](Tape& t, std::span<const Var>) { return Unroller(model, t).run(seq).loss; };
  ok &= report("memrnn unrolled 5 steps (every parameter)", gradcheck(loss, none, &model.params()));

  std::printf("%s\n", ok ? "check: all passed" : "check: FAILED");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
