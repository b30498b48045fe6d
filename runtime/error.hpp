/// @file
/// Errors matmem throws. Every message names what was wrong and where, so a user can act on it.
#pragma once
#include <stdexcept>
#include <string>

namespace matmem {

/// Base of every matmem error.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Operands of an op do not fit; the message names the op and the shapes.
struct ShapeError : Error {
  using Error::Error;
};

/// A NaN or Inf appeared; the message names the op (and node) that produced it.
struct NumericError : Error {
  using Error::Error;
};

}  // namespace matmem
