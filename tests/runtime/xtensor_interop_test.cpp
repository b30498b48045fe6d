#include <catch2/catch.hpp>

#include "matmem/runtime/xtensor_interop.hpp"

using namespace matmem;

TEST_CASE("xtensor arrays round-trip in logical [B,r,c] order through the interleaved layout", "[runtime]") {
  xt::xarray<double> a = xt::xarray<double>::from_shape({2, 3, 4});
  for (std::size_t k = 0; k < a.size(); ++k) a.data()[k] = double(k);
  Tensor t = from_xarray(a);
  CHECK(t.shape() == matrices(2, 3, 4));
  CHECK(t.at(1, 2, 3) == 23.0);
  CHECK(t.get(1 * 4 + 0) == 12.0);  // physical (i=0, b=1, j=0) is logical element (1,0,0)
  xt::xarray<double> back = to_xarray<double>(t.view<double>());
  const bool same = back == a;
  CHECK(same);
}

TEST_CASE("a 4-D array becomes a memory and back", "[runtime]") {
  xt::xarray<float> a = xt::xarray<float>::from_shape({2, 5, 3, 3});
  for (std::size_t k = 0; k < a.size(); ++k) a.data()[k] = float(k) * 0.5f;
  Tensor t = from_xarray(a);
  CHECK(t.shape() == memory(2, 5, 3, 3));
  const bool same = to_xarray<float>(t.view<float>()) == a;
  CHECK(same);
}
