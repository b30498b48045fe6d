// layer_norm: values by hand, its groups in the batch-interleaved layout, and its refusals. The gradient is
// checked with every op in gradcheck_all_test.cpp.
#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

using matmem::testing::logical;

TEST_CASE("layer_norm over rows normalises each row of each sample by hand", "[ops][layer_norm]") {
  Tape tape(DType::f64);
  // Sample 0 rows: [1 2 3], [10 10 16]; sample 1 rows: [-3 0 3], [2 4 6].
  const double v[2][2][3] = {{{1, 2, 3}, {10, 10, 16}}, {{-3, 0, 3}, {2, 4, 6}}};
  Tensor x = logical(matrices(2, 2, 3), [&](auto b, auto i, auto j) { return v[b][i][j]; });
  const double eps = 1e-5;
  Tensor y = layer_norm(tape.input(x), LayerNormOver::rows, eps).value_copy();
  // [1 2 3]: m 2, v 2/3.  [10 10 16]: m 12, v 8.  [-3 0 3]: m 0, v 6.  [2 4 6]: m 4, v 8/3.
  const double m[2][2] = {{2, 12}, {0, 4}}, var[2][2] = {{2.0 / 3, 8}, {6, 8.0 / 3}};
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        INFO("b " << b << " i " << i << " j " << j);
        CHECK(y.at(b, i, j) == Approx((v[b][i][j] - m[b][i]) / std::sqrt(var[b][i] + eps)).epsilon(1e-12));
      }
}

TEST_CASE("layer_norm over the matrix normalises each sample's whole matrix by hand", "[ops][layer_norm]") {
  Tape tape(DType::f64);
  // Sample 0 = [1 2; 3 4] (m 2.5, v 1.25); sample 1 = [0 0; 0 8] (m 2, v 12). In the layout the two samples'
  // rows interleave, so a group that took contiguous elements would mix them.
  const double v[2][2][2] = {{{1, 2}, {3, 4}}, {{0, 0}, {0, 8}}};
  Tensor x = logical(matrices(2, 2, 2), [&](auto b, auto i, auto j) { return v[b][i][j]; });
  Tensor y = layer_norm(tape.input(x), LayerNormOver::matrix, 1e-5).value_copy();
  const double m[2] = {2.5, 2}, var[2] = {1.25, 12};
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        INFO("b " << b << " i " << i << " j " << j);
        CHECK(y.at(b, i, j) == Approx((v[b][i][j] - m[b]) / std::sqrt(var[b] + 1e-5)).epsilon(1e-12));
      }
}

TEST_CASE("layer_norm of a constant matrix is 0, with a finite gradient", "[ops][layer_norm]") {
  Tape tape(DType::f32);
  Tensor x(DType::f32, matrices(3, 2, 4));
  x.fill(7.0);
  Var in = tape.input(x, true);
  Var y = layer_norm(in);
  for (std::int64_t k = 0; k < y.shape().numel(); ++k) CHECK(y.value<float>()[k] == 0.0f);
  tape.backward(sum(hadamard(y, y)));
  for (std::int64_t k = 0; k < x.numel(); ++k) CHECK(std::isfinite(in.grad<float>()[k]));
}

TEST_CASE("layer_norm refuses a memory and groups of one element, naming the op and the shape", "[ops][errors]") {
  Tape tape;
  Tensor m(DType::f32, memory(2, 4, 3, 3)), col(DType::f32, matrices(2, 5, 1)), one(DType::f32, scalars(2));
  CHECK_THROWS_WITH(layer_norm(tape.input(m)), Contains("layer_norm") && Contains("[2,4,3,3]"));
  CHECK_THROWS_WITH(layer_norm(tape.input(col), LayerNormOver::rows), Contains("layer_norm") && Contains("[2,5,1]"));
  CHECK_NOTHROW(layer_norm(tape.input(col), LayerNormOver::matrix));
  CHECK_THROWS_AS(layer_norm(tape.input(one), LayerNormOver::matrix), ShapeError);
  CHECK_THROWS_WITH(layer_norm(tape.input(col), LayerNormOver::matrix, 0.0), Contains("layer_norm") && Contains("ε"));
}
