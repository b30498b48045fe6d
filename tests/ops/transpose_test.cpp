// transpose (ops/transpose.hpp): each matrix of a batch transposed in matmem's layout, a parameter too; a memory
// refused naming the op and the shape. Its gradient is checked with every op's (gradcheck_all_test.cpp).
#include <catch2/catch.hpp>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/transpose.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("transpose: y(b, j, i) = x(b, i, j) for a batch and for a parameter", "[ops][transpose]") {
  Tape tape(DType::f64);
  Tensor x(DType::f64, matrices(3, 2, 4)), u(DType::f64, parameter(5, 2));
  for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, double(k) * 0.5 - 3);
  for (std::int64_t k = 0; k < u.numel(); ++k) u.set(k, double(k) + 1);
  const Tensor y = transpose(tape.input(x)).value_copy();
  REQUIRE(y.shape() == matrices(3, 4, 2));
  for (std::int64_t b = 0; b < 3; ++b)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 4; ++j) CHECK(y.at(b, j, i) == x.at(b, i, j));
  const Tensor ut = transpose(tape.input(u)).value_copy();
  REQUIRE(ut.shape() == parameter(2, 5));
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 2; ++j) CHECK(ut.at(0, j, i) == u.at(0, i, j));
}

TEST_CASE("transpose refuses a memory, naming the op and the shape", "[ops][transpose][errors]") {
  Tape tape;
  Tensor m(DType::f32, memory(2, 3, 4, 5));
  CHECK_THROWS_WITH(transpose(tape.input(m)), Contains("transpose") && Contains("[2,3,4,5]"));
}
