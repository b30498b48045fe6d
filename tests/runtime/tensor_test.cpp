// Tensor: copies of a filled tensor and of an empty (default-constructed or moved-from) one, and all_finite.
#include <catch2/catch.hpp>

#include <limits>
#include <utility>

#include "matmem/runtime/tensor.hpp"

using namespace matmem;

TEST_CASE("a tensor copies its values, and an empty tensor copies as empty", "[runtime][tensor]") {
  Tensor t(DType::f64, matrices(2, 2, 3));
  for (std::int64_t k = 0; k < t.numel(); ++k) t.set(k, double(k) + 0.5);
  const Tensor c = t;
  REQUIRE(c.shape() == t.shape());
  CHECK(c.raw() != t.raw());
  for (std::int64_t k = 0; k < t.numel(); ++k) CHECK(c.get(k) == double(k) + 0.5);
  const Tensor empty;
  const Tensor copy = empty;  // no data to read: nothing read, nothing allocated
  CHECK(copy.raw() == nullptr);
  Tensor moved = std::move(t);
  const Tensor from_moved = t;  // NOLINT(bugprone-use-after-move): a moved-from tensor copies as empty
  CHECK(from_moved.raw() == nullptr);
  CHECK(moved.get(5) == 5.5);
}

TEST_CASE("all_finite finds a NaN or an Inf at any place, in either dtype, and passes every finite value",
          "[runtime][tensor]") {
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(name_of(dt));
    Tensor t(dt, matrices(1, 1, 37));  // vector chunks and a tail
    const double big = dt == DType::f32 ? double(std::numeric_limits<float>::max())
                                        : std::numeric_limits<double>::max();
    const double tiny = dt == DType::f32 ? double(std::numeric_limits<float>::denorm_min())
                                         : std::numeric_limits<double>::denorm_min();
    const double finite[] = {0.0, -0.0, 1.5, -2.0, big, -big, tiny, -tiny};
    for (std::int64_t k = 0; k < t.numel(); ++k) t.set(k, finite[k % 8]);
    CHECK(t.all_finite());
    for (double bad : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()})
      for (std::int64_t k = 0; k < t.numel(); ++k) {
        const double keep = t.get(k);
        t.set(k, bad);
        INFO("element " << k << " = " << bad);
        CHECK_FALSE(t.all_finite());
        t.set(k, keep);
      }
    CHECK(t.all_finite());
  }
  CHECK(Tensor().all_finite());
}
