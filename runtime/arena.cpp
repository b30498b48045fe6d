#include "runtime/arena.hpp"

#include <algorithm>
#include <cstdint>

namespace matmem {
namespace {
constexpr std::size_t kAlign = 64;
std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
std::byte* aligned(std::byte* p) {
  auto v = reinterpret_cast<std::uintptr_t>(p);
  return reinterpret_cast<std::byte*>((v + kAlign - 1) / kAlign * kAlign);
}
}  // namespace

void* Arena::allocate_bytes(std::size_t bytes) {
  bytes = round_up(std::max<std::size_t>(bytes, 1));
  while (true) {
    if (current_ < blocks_.size()) {
      Block& b = blocks_[current_];
      if (offset_ + bytes <= b.size) {
        void* p = aligned(b.memory.get()) + offset_;
        offset_ += bytes;
        return p;
      }
      if (current_ + 1 < blocks_.size()) {  // move on to the next existing block
        used_before_ += offset_;
        ++current_;
        offset_ = 0;
        continue;
      }
      used_before_ += offset_;
      ++current_;
      offset_ = 0;
    }
    std::size_t size = std::max(next_block_bytes_, bytes);
    next_block_bytes_ = size * 2;
    blocks_.push_back({std::unique_ptr<std::byte[]>(new std::byte[size + kAlign]), size});
    current_ = blocks_.size() - 1;
  }
}

void Arena::reset() {
  if (blocks_.size() > 1) {  // coalesce into one block big enough for the whole last pass
    std::size_t total = bytes_reserved();
    blocks_.clear();
    blocks_.push_back({std::unique_ptr<std::byte[]>(new std::byte[total + kAlign]), total});
    next_block_bytes_ = total;
  }
  current_ = 0;
  offset_ = 0;
  used_before_ = 0;
}

std::size_t Arena::bytes_reserved() const {
  std::size_t total = 0;
  for (const Block& b : blocks_) total += b.size;
  return total;
}

}  // namespace matmem
