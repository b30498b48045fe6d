// vec_outer and vec_matvec: values by hand, each sample's vec read row by row in the batch-interleaved layout.
// Their gradients are checked with every op in gradcheck_all_test.cpp, their refusals in shape_errors_test.cpp.
#include <catch2/catch.hpp>

#include "matmem/ops/fast_weight_matrix.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;

using matmem::testing::logical;

TEST_CASE("vec_outer is vec(a) vec(b)ᵀ per sample, vec row by row", "[ops][fast_weight_matrix]") {
  Tape tape(DType::f64);
  // a_0 = [1 2; 3 4] -> vec (1, 2, 3, 4); a_1 = −a_0. b_0 = [5 6 7], b_1 = [1 0 −1].
  Tensor a = logical(matrices(2, 2, 2), [](auto b, auto i, auto j) { return (b ? -1.0 : 1.0) * double(2 * i + j + 1); });
  Tensor v = logical(matrices(2, 1, 3), [](auto b, auto, auto j) { return b ? 1.0 - double(j) : 5.0 + double(j); });
  const Var y = vec_outer(tape.input(a), tape.input(v));
  REQUIRE(y.shape() == matrices(2, 4, 3));
  const Tensor out = y.value_copy();
  for (std::int64_t p = 0; p < 4; ++p)
    for (std::int64_t q = 0; q < 3; ++q) {
      CHECK(out.at(0, p, q) == double(p + 1) * double(5 + q));
      CHECK(out.at(1, p, q) == -double(p + 1) * double(1 - q));
    }
}

TEST_CASE("vec_matvec is m vec(x) per sample, back in x's shape", "[ops][fast_weight_matrix]") {
  Tape tape(DType::f64);
  // x_b = [1 2; 3 4] + b -> vec (1+b, 2+b, 3+b, 4+b); m_0 = the permutation reversing vec, m_1 = 2·I.
  Tensor x = logical(matrices(2, 2, 2), [](auto b, auto i, auto j) { return double(2 * i + j + 1 + b); });
  Tensor m = logical(matrices(2, 4, 4), [](auto b, auto p, auto q) {
    return b == 0 ? (p + q == 3 ? 1.0 : 0.0) : (p == q ? 2.0 : 0.0);
  });
  const Var y = vec_matvec(tape.input(m), tape.input(x));
  REQUIRE(y.shape() == matrices(2, 2, 2));
  const Tensor out = y.value_copy();
  CHECK(out.at(0, 0, 0) == 4.0);  // reversed: (4, 3, 2, 1)
  CHECK(out.at(0, 0, 1) == 3.0);
  CHECK(out.at(0, 1, 0) == 2.0);
  CHECK(out.at(0, 1, 1) == 1.0);
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 2; ++j) CHECK(out.at(1, i, j) == 2.0 * double(2 * i + j + 2));
}
