// Tensor's copies: a filled tensor's values, and an empty (default-constructed or moved-from) tensor's lack of any.
#include <catch2/catch.hpp>

#include <utility>

#include "runtime/tensor.hpp"

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
