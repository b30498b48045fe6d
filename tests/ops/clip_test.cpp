// clip_gradient (ops/clip.cpp): the identity forward; backward adds the upstream gradient clipped to ±c, element
// by element, into the input's. Its gradient where nothing is clipped is checked with every op's
// (gradcheck_all_test.cpp); here the clipped case, by value, and a bad bound refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("clip_gradient: y = x, and x's gradient is the upstream one clipped to ±c, added to what it holds",
          "[ops][clip]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    Tape tape(dtype);
    Tensor x(dtype, matrices(2, 1, 3));
    const double xs[] = {0.5, -1.25, 3.0, 0.0, 7.5, -2.0};
    for (std::int64_t k = 0; k < 6; ++k) x.set(k, xs[k]);
    const Var v = tape.input(x, true);
    const Var y = clip_gradient(v, 1.5);
    // x also feeds a second use, scale(x, 1): its gradient (the seed, unclipped) must stay, the clipped one added.
    const Var z = add(y, scale(v, 1.0));
    Tensor seed(dtype, z.shape());
    const double gs[] = {2.0, -3.0, 0.25, -1.5, 1e30, std::numeric_limits<double>::quiet_NaN()};
    for (std::int64_t k = 0; k < 6; ++k) seed.set(k, gs[k]);
    const Tensor yv = y.value_copy();
    for (std::int64_t k = 0; k < 6; ++k) CHECK(yv.get(k) == x.get(k));
    tape.backward(z, seed);
    const Tensor g = v.grad_copy();
    const double clipped[] = {1.5, -1.5, 0.25, -1.5, 1.5};
    for (std::int64_t k = 0; k < 5; ++k) {
      INFO("element " << k << ", " << name_of(dtype));
      CHECK(g.get(k) == Approx(gs[k] + clipped[k]).epsilon(1e-6));
    }
    CHECK(std::isnan(g.get(5)));  // a NaN passes on, for the trainer to catch and name
  }
}

TEST_CASE("clip_gradient: a bound that is not finite and > 0 is refused, naming the op", "[ops][clip][errors]") {
  Tape tape(DType::f32);
  const Tensor x(DType::f32, matrices(1, 2, 2));
  for (double c : {0.0, -1.0, std::numeric_limits<double>::infinity()})
    CHECK_THROWS_WITH(clip_gradient(tape.input(x, true), c), Contains("clip_gradient: the bound must be finite and > 0"));
}
