// The IDX format (LeCun et al.'s MNIST files, and Fashion-MNIST's), plain or gzip-compressed.
//
// A file is: two zero bytes; a type byte (0x08: unsigned bytes, the only type read here); a byte n, the
// number of dimensions (1..4 here); n sizes, each a 32-bit big-endian unsigned integer; then the data, the
// product of the sizes in bytes, row-major (the last dimension varies fastest), and nothing after it.
// Labels are a 1-dimensional file [N]; images a 3-dimensional one [N, rows, cols].
// A file starting with gzip's magic (1f 8b) is inflated first (zlib), whole, to the end of its stream.
// Anything else is refused with an Error naming the file and what is wrong: a bad magic, a type other than
// unsigned bytes, no or too many dimensions, a size of 0, data shorter or longer than the sizes say, a
// corrupt or truncated gzip stream.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace matmem {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;  // row-major, size = Π dims
  std::int64_t count() const { return dims.empty() ? 0 : dims[0]; }  // the items (first dimension)
};

IdxArray read_idx(const std::string& path);
// The same from bytes already read (`name` names them in errors); gzip's magic means compressed.
IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& name);
// The bytes of an IDX file of unsigned bytes (the tests write their own with it).
std::vector<std::uint8_t> idx_bytes(const std::vector<std::int64_t>& dims, const std::vector<std::uint8_t>& data);

}  // namespace matmem
