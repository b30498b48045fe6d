#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/runtime/random.hpp"

using namespace matmem;

TEST_CASE("the same seed gives the same numbers and a different seed different ones", "[random]") {
  Rng a(42), b(42), c(43);
  for (int k = 0; k < 100; ++k) {
    const auto x = a.next();
    CHECK(x == b.next());
    CHECK(x != c.next());
  }
}

TEST_CASE("xoshiro256** seeded by splitmix64 gives the documented first value", "[random]") {
  // splitmix64 from 0 gives 0xe220a8397b1dcdaf as the first state word; these are the reference outputs.
  Rng r(0);
  CHECK(r.state()[0] == 0xe220a8397b1dcdafULL);
  CHECK(r.state()[1] == 0x6e789e6aa1b965f4ULL);
}

TEST_CASE("uniform and integer and normal draws have the right range and moments", "[random]") {
  Rng r(7);
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int k = 0; k < n; ++k) {
    const double u = r.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    const auto i = r.uniform_int(std::int64_t(1), std::int64_t(20));
    REQUIRE(i >= 1);
    REQUIRE(i <= 20);
    const double z = r.normal();
    sum += z;
    sum2 += z * z;
  }
  CHECK(std::abs(sum / n) < 0.01);
  CHECK(std::abs(sum2 / n - 1.0) < 0.02);
}

TEST_CASE("state can be saved and restored", "[random]") {
  Rng r(5);
  r.next();
  const Rng::State s = r.state();
  const auto x = r.next();
  r.set_state(s);
  CHECK(r.next() == x);
}

TEST_CASE("coin() is bernoulli(0.5) draw for draw, as 1 or 0", "[random]") {
  Rng a(7), b(7);
  std::int64_t ones = 0;
  for (int k = 0; k < 100000; ++k) {
    const std::uint64_t c = a.coin();
    REQUIRE(c == (b.bernoulli(0.5) ? 1u : 0u));
    ones += std::int64_t(c);
  }
  CHECK(a.state() == b.state());
  CHECK(ones > 49000);
  CHECK(ones < 51000);
}
