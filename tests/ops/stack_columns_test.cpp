// stack_columns (ops/ops.hpp): the parts' columns side by side, each sample's matrix in matmem's layout; the
// gradient goes back to the columns each part filled; mismatched parts refused naming the op and both shapes.
// Its gradient is checked with every op's (gradcheck_all_test.cpp).
#include <catch2/catch.hpp>

#include <vector>

#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("stack_columns: y(b, i, j) is column j − (columns before) of the part that column falls in",
          "[ops][stack_columns]") {
  Tape tape(DType::f64);
  // Part c is 10 wide: past the widths the moves unroll (ops::move_columns).
  Tensor a(DType::f64, matrices(3, 2, 1)), b(DType::f64, matrices(3, 2, 4)), c(DType::f64, matrices(3, 2, 10));
  double v = 0;
  for (Tensor* t : {&a, &b, &c})
    for (std::int64_t k = 0; k < t->numel(); ++k) t->set(k, v += 0.25);
  const Var parts[] = {tape.input(b), tape.input(a), tape.input(c)};
  const Tensor y = stack_columns(parts).value_copy();
  REQUIRE(y.shape() == matrices(3, 2, 15));
  for (std::int64_t s = 0; s < 3; ++s)
    for (std::int64_t i = 0; i < 2; ++i) {
      for (std::int64_t j = 0; j < 4; ++j) CHECK(y.at(s, i, j) == b.at(s, i, j));
      CHECK(y.at(s, i, 4) == a.at(s, i, 0));
      for (std::int64_t j = 0; j < 10; ++j) CHECK(y.at(s, i, 5 + j) == c.at(s, i, j));
    }
}

TEST_CASE("stack_columns: each part's gradient is its columns of the upstream gradient, the same part twice "
          "gets both",
          "[ops][stack_columns]") {
  Tape tape(DType::f64);
  Tensor a(DType::f64, matrices(2, 3, 1)), b(DType::f64, matrices(2, 3, 2)), g(DType::f64, matrices(2, 3, 4));
  a.fill(1.0), b.fill(2.0);
  for (std::int64_t k = 0; k < g.numel(); ++k) g.set(k, double(k + 1));
  const Var va = tape.input(a, true), vb = tape.input(b, true);
  const Var parts[] = {va, vb, va};
  const Var y = stack_columns(parts);
  tape.backward(sum(hadamard(y, tape.input(g))));
  const Tensor ga = va.grad_copy(), gb = vb.grad_copy();
  for (std::int64_t s = 0; s < 2; ++s)
    for (std::int64_t i = 0; i < 3; ++i) {
      CHECK(ga.at(s, i, 0) == g.at(s, i, 0) + g.at(s, i, 3));
      CHECK(gb.at(s, i, 0) == g.at(s, i, 1));
      CHECK(gb.at(s, i, 1) == g.at(s, i, 2));
    }
}

TEST_CASE("stack_columns refuses parts of other batch or rows, a memory, none and more than 64",
          "[ops][stack_columns][errors]") {
  Tape tape;
  Tensor ta(DType::f32, matrices(2, 3, 1)), tr(DType::f32, matrices(2, 4, 1)), tb(DType::f32, matrices(5, 3, 1)),
      tm(DType::f32, memory(2, 3, 3, 1));
  const Var a = tape.input(ta), tall = tape.input(tr), other_batch = tape.input(tb), mem = tape.input(tm);
  const Var rows[] = {a, tall}, batch[] = {a, other_batch}, slots[] = {a, mem};
  CHECK_THROWS_WITH(stack_columns(rows), Contains("stack_columns") && Contains("[2,3,1]") && Contains("[2,4,1]"));
  CHECK_THROWS_WITH(stack_columns(batch), Contains("stack_columns") && Contains("[5,3,1]"));
  CHECK_THROWS_WITH(stack_columns(slots), Contains("stack_columns") && Contains("[2,3,3,1]"));
  CHECK_THROWS_WITH(stack_columns(std::span<const Var>()), Contains("stack_columns"));
  const std::vector<Var> many(65, a);
  CHECK_THROWS_WITH(stack_columns(many), Contains("stack_columns") && Contains("65"));
  CHECK_NOTHROW(stack_columns(std::span<const Var>(many).first(64)));
}
