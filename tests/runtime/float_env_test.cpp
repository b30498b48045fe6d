// FlushDenormals (runtime/float_env.hpp): subnormal operands read as zero and subnormal results become zero while
// it lives, on its thread; normal values compute as before; the mode before it comes back when it ends.
#include <catch2/catch.hpp>

#include <cfloat>

#include "matmem/runtime/float_env.hpp"

using namespace matmem;

namespace {
// Through volatile, so that the compiler folds nothing and each product is computed now, in this thread's mode.
float times(float a, float b) {
  volatile float x = a, y = b;
  return x * y;
}
double times(double a, double b) {
  volatile double x = a, y = b;
  return x * y;
}
}  // namespace

TEST_CASE("FlushDenormals: subnormal operands and results are zero while it lives, and the mode comes back",
          "[runtime][float_env]") {
  const float sub = FLT_MIN / 4;  // subnormal
  REQUIRE(sub > 0);
  REQUIRE(times(sub, 1.0f) == sub);  // IEEE by default
  const bool before = flushes_denormals();
  REQUIRE_FALSE(before);
  {
    const FlushDenormals off(false);  // configured off: the thread's mode as it was
    CHECK_FALSE(flushes_denormals());
    CHECK(times(sub, 1.0f) == sub);
  }
  {
    const FlushDenormals flush;
    if (!flushes_denormals()) {
      WARN("skipped: this core has no flush-to-zero mode (FlushDenormals does nothing here)");
      return;
    }
    CHECK(times(sub, 0x1p30f) == 0.0f);        // a subnormal operand reads as zero (the product would be normal)
    CHECK(times(FLT_MIN, 0.5f) == 0.0f);       // a subnormal result is zero
    CHECK(times(DBL_MIN / 4, 1.0) == 0.0);     // float64 alike
    CHECK(times(FLT_MIN, 2.0f) == 2 * FLT_MIN);  // normal values as before
    CHECK(times(3.0f, 0.25f) == 0.75f);
    {
      const FlushDenormals off(false);  // a scope configured off leaves the mode as it is
      CHECK(flushes_denormals());
    }
    CHECK(flushes_denormals());
  }
  CHECK(flushes_denormals() == before);
  CHECK(times(sub, 1.0f) == sub);
  CHECK(times(sub, 0x1p30f) == sub * 0x1p30f);
  CHECK(times(FLT_MIN, 0.5f) == FLT_MIN / 2);
}
