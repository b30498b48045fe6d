#include "matmem/runtime/arena.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
constexpr std::size_t kAlign = 64;
std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
std::byte* aligned(std::byte* p) {
  auto v = reinterpret_cast<std::uintptr_t>(p);
  return reinterpret_cast<std::byte*>((v + kAlign - 1) / kAlign * kAlign);
}
constexpr std::size_t kHugePage = std::size_t(2) << 20;
// Blocks double up to this size, then grow by it: a pass of many GiB over-reserves at most 1 GiB.
constexpr std::size_t kMaxGrowth = std::size_t(1) << 30;

[[noreturn]] void out_of_memory(std::size_t bytes, std::size_t reserved) {
  throw Error(fmt::format("out of memory: the tape needs another {:.0f} MiB on top of the {:.0f} MiB it holds "
                          "(a smaller batch, shorter sequences or a smaller model fit)",
                          double(bytes) / (1 << 20), double(reserved) / (1 << 20)));
}
}  // namespace

void Arena::Free::operator()(std::byte* p) const { std::free(p); }

// Blocks of 2 MiB or more are 2 MiB-aligned and advised to use transparent huge pages: a training step
// streams tens of MiB of values and gradients, and with 4 KiB pages the TLB misses on every page.
Arena::Block Arena::make_block(std::size_t size, std::size_t reserved) {
  const std::size_t bytes = size + kAlign;
  if (bytes < kHugePage) {
    void* p = std::malloc(bytes);
    if (!p) out_of_memory(bytes, reserved);
    return {std::unique_ptr<std::byte[], Free>(static_cast<std::byte*>(p)), size};
  }
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (!p) out_of_memory(rounded, reserved);
  madvise(p, rounded, MADV_HUGEPAGE);
  return {std::unique_ptr<std::byte[], Free>(static_cast<std::byte*>(p)), rounded - kAlign};
}

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
    next_block_bytes_ = std::min(size * 2, kMaxGrowth);
    blocks_.push_back(make_block(size, bytes_reserved()));
    current_ = blocks_.size() - 1;
  }
}

void Arena::reset() {
  if (blocks_.size() > 1) {  // coalesce into one block big enough for the whole last pass
    std::size_t total = bytes_reserved();
    blocks_.clear();
    blocks_.push_back(make_block(total, 0));
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
