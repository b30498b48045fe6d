// A task test's check of one frame against the matrix a hand-written example says it holds.
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "matmem/runtime/tensor.hpp"

namespace matmem::testing {
using Frame = std::vector<std::vector<double>>;  // a matrix, row by row

// Frame `f`'s matrix of sequence b equals `want`, element by element (to 1e-6).
inline void check_frame(const Tensor& f, std::int64_t b, const Frame& want, const std::string& what) {
  REQUIRE(f.shape().rows == std::int64_t(want.size()));
  for (std::int64_t i = 0; i < f.shape().rows; ++i) {
    REQUIRE(f.shape().cols == std::int64_t(want[std::size_t(i)].size()));
    for (std::int64_t j = 0; j < f.shape().cols; ++j) {
      INFO(what << ", sequence " << b << ", (" << i << "," << j << ")");
      CHECK(f.at(b, i, j) == Approx(want[std::size_t(i)][std::size_t(j)]).margin(1e-6));
    }
  }
}
}  // namespace matmem::testing
