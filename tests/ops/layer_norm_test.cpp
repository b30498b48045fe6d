// layer_norm: values by hand, its groups in the batch-interleaved layout, and its refusals. The gradient is
// checked with every op in gradcheck_all_test.cpp.
#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/random.hpp"
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

TEST_CASE("layer_norm_joint normalises several matrices of each sample as one group, by hand", "[ops][layer_norm]") {
  Tape tape(DType::f64);
  // Sample 0: a = [1 2; 3 4], b = [5], c = [0 0 9]: n 8, m 3, v (4+1+0+1+4+9+9+36)/8 = 8.
  // Sample 1: a = [0 0; 0 0], b = [-4], c = [2 2 0]: n 8, m 0, v (16+4+4)/8 = 3.
  const double a[2][2][2] = {{{1, 2}, {3, 4}}, {{0, 0}, {0, 0}}}, bv[2] = {5, -4}, cv[2][3] = {{0, 0, 9}, {2, 2, 0}};
  const Tensor xa = logical(matrices(2, 2, 2), [&](auto b, auto i, auto j) { return a[b][i][j]; });
  const Tensor xb = logical(matrices(2, 1, 1), [&](auto b, auto, auto) { return bv[b]; });
  const Tensor xc = logical(matrices(2, 1, 3), [&](auto b, auto, auto j) { return cv[b][j]; });
  const Var x[] = {tape.input(xa), tape.input(xb), tape.input(xc)};
  const double eps = 1e-6, m[2] = {3, 0}, var[2] = {8, 3};
  Var y[3];
  layer_norm_joint(x, y, eps);
  const Tensor moments = layer_norm_moments(x, eps).value_copy();
  const Tensor ya = y[0].value_copy(), yb = y[1].value_copy(), yc = y[2].value_copy();
  for (int b = 0; b < 2; ++b) {
    INFO("sample " << b);
    const double s = 1 / std::sqrt(var[b] + eps);
    CHECK(moments.at(b, 0, 0) == Approx(m[b]).margin(1e-14));
    CHECK(moments.at(b, 1, 0) == Approx(s).epsilon(1e-12));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) CHECK(ya.at(b, i, j) == Approx((a[b][i][j] - m[b]) * s).epsilon(1e-12));
    CHECK(yb.at(b, 0, 0) == Approx((bv[b] - m[b]) * s).epsilon(1e-12));
    for (int j = 0; j < 3; ++j) CHECK(yc.at(b, 0, j) == Approx((cv[b][j] - m[b]) * s).epsilon(1e-12));
  }
}

TEST_CASE("layer_norm_joint of one matrix is layer_norm over it, in value and gradient", "[ops][layer_norm]") {
  Tape tape(DType::f64);
  Rng rng(3);
  const Tensor x = random_tensor(rng, matrices(3, 2, 4), -1.0, 2.0), g = random_tensor(rng, matrices(3, 2, 4));
  const Var a = tape.input(x, true), b = tape.input(x, true);
  Var joint[1];
  layer_norm_joint(std::span<const Var>(&a, 1), joint, 1e-5);
  const Var single = layer_norm(b, LayerNormOver::matrix, 1e-5);
  tape.backward(add(sum(hadamard(joint[0], tape.input(g))), sum(hadamard(single, tape.input(g)))));
  for (std::int64_t k = 0; k < x.numel(); ++k) {
    CHECK(joint[0].value<double>()[k] == Approx(single.value<double>()[k]).epsilon(1e-12).margin(1e-14));
    CHECK(a.grad<double>()[k] == Approx(b.grad<double>()[k]).epsilon(1e-10).margin(1e-12));
  }
}

TEST_CASE("layer_norm_moments refuses no parts, a memory, other batches and one element", "[ops][errors]") {
  Tape tape;
  const Tensor tm(DType::f32, memory(2, 4, 3, 3)), ta(DType::f32, matrices(2, 2, 2)), to(DType::f32, matrices(3, 2, 2)),
      t1(DType::f32, scalars(2));
  const Var m = tape.input(tm), a = tape.input(ta), other = tape.input(to), one = tape.input(t1);
  CHECK_THROWS_WITH(layer_norm_moments(std::span<const Var>()), Contains("layer_norm_moments"));
  CHECK_THROWS_WITH(layer_norm_moments(std::vector<Var>{a, m}), Contains("layer_norm_moments") && Contains("[2,4,3,3]"));
  CHECK_THROWS_WITH(layer_norm_moments(std::vector<Var>{a, other}), Contains("batch") && Contains("[3,2,2]"));
  CHECK_THROWS_WITH(layer_norm_moments(std::vector<Var>{one}), Contains("one element"));
  CHECK_NOTHROW(layer_norm_moments(std::vector<Var>{one, one}));
  CHECK_THROWS_WITH(layer_norm_moments(std::vector<Var>{a}, 0.0), Contains("ε"));
}
