// Internal: a run-time count turned into a compile-time one, so that a kernel's loops over it unroll and its
// arrays sized by it stay in registers (the memory ops' reads, keys and chunks, the heads' column widths).
#pragma once
#include <cstdint>
#include <type_traits>

namespace matmem::ops {

// f(std::integral_constant<int, n>{}) for Lo ≤ n ≤ Hi, else otherwise().
template <int Lo, int Hi, class F, class G>
decltype(auto) with_fixed(std::int64_t n, F&& f, G&& otherwise) {
  if constexpr (Lo > Hi) {
    return otherwise();
  } else {
    if (n == Lo) return f(std::integral_constant<int, Lo>{});
    return with_fixed<Lo + 1, Hi>(n, f, otherwise);
  }
}

}  // namespace matmem::ops
