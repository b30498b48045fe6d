#include "matmem/runtime/shape.hpp"

#include <fmt/format.h>

namespace matmem {

std::string Shape::str() const {
  if (slots != 1) return fmt::format("[{},{},{},{}]", batch, slots, rows, cols);
  return fmt::format("[{},{},{}]", batch, rows, cols);
}

}  // namespace matmem
