// stack_rows (ops/ops.hpp): the parts' rows one below the other, each sample's matrix in matmem's layout; the
// gradient goes back to the rows each part filled; mismatched parts refused naming the op and both shapes. Its
// gradient is checked with every op's (gradcheck_all_test.cpp).
#include <catch2/catch.hpp>

#include <vector>

#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("stack_rows: y(b, i, j) is row i − (rows before) of the part that row falls in", "[ops][stack_rows]") {
  Tape tape(DType::f64);
  Tensor a(DType::f64, matrices(3, 1, 4)), b(DType::f64, matrices(3, 2, 4)), c(DType::f64, matrices(3, 3, 4));
  double v = 0;
  for (Tensor* t : {&a, &b, &c})
    for (std::int64_t k = 0; k < t->numel(); ++k) t->set(k, v += 0.25);
  const Var parts[] = {tape.input(b), tape.input(a), tape.input(c)};
  const Tensor y = stack_rows(parts).value_copy();
  REQUIRE(y.shape() == matrices(3, 6, 4));
  for (std::int64_t s = 0; s < 3; ++s)
    for (std::int64_t j = 0; j < 4; ++j) {
      CHECK(y.at(s, 0, j) == b.at(s, 0, j));
      CHECK(y.at(s, 1, j) == b.at(s, 1, j));
      CHECK(y.at(s, 2, j) == a.at(s, 0, j));
      for (std::int64_t i = 0; i < 3; ++i) CHECK(y.at(s, 3 + i, j) == c.at(s, i, j));
    }
}

TEST_CASE("stack_rows: each part's gradient is its rows of the upstream gradient, the same part twice gets both",
          "[ops][stack_rows]") {
  Tape tape(DType::f64);
  Tensor a(DType::f64, matrices(2, 1, 3)), b(DType::f64, matrices(2, 2, 3)), g(DType::f64, matrices(2, 4, 3));
  a.fill(1.0), b.fill(2.0);
  for (std::int64_t k = 0; k < g.numel(); ++k) g.set(k, double(k + 1));
  const Var va = tape.input(a, true), vb = tape.input(b, true);
  const Var parts[] = {va, vb, va};
  const Var y = stack_rows(parts);
  tape.backward(sum(hadamard(y, tape.input(g))));
  const Tensor ga = va.grad_copy(), gb = vb.grad_copy();
  for (std::int64_t s = 0; s < 2; ++s)
    for (std::int64_t j = 0; j < 3; ++j) {
      CHECK(ga.at(s, 0, j) == g.at(s, 0, j) + g.at(s, 3, j));
      CHECK(gb.at(s, 0, j) == g.at(s, 1, j));
      CHECK(gb.at(s, 1, j) == g.at(s, 2, j));
    }
}

TEST_CASE("stack_rows refuses parts of other batch or columns, a memory, none and more than 64",
          "[ops][stack_rows][errors]") {
  Tape tape;
  Tensor ta(DType::f32, matrices(2, 1, 3)), tw(DType::f32, matrices(2, 1, 4)), tb(DType::f32, matrices(5, 1, 3)),
      tm(DType::f32, memory(2, 3, 1, 3));
  const Var a = tape.input(ta), wide = tape.input(tw), other_batch = tape.input(tb), mem = tape.input(tm);
  const Var cols[] = {a, wide}, batch[] = {a, other_batch}, slots[] = {a, mem};
  CHECK_THROWS_WITH(stack_rows(cols), Contains("stack_rows") && Contains("[2,1,3]") && Contains("[2,1,4]"));
  CHECK_THROWS_WITH(stack_rows(batch), Contains("stack_rows") && Contains("[5,1,3]"));
  CHECK_THROWS_WITH(stack_rows(slots), Contains("stack_rows") && Contains("[2,3,1,3]"));
  CHECK_THROWS_WITH(stack_rows(std::span<const Var>()), Contains("stack_rows"));
  const std::vector<Var> many(65, a);
  CHECK_THROWS_WITH(stack_rows(many), Contains("stack_rows") && Contains("65"));
  CHECK_NOTHROW(stack_rows(std::span<const Var>(many).first(64)));
}
