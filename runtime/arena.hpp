/// @file
/// Arena: a bump allocator for the values, gradients and saved buffers of one tape.
///
/// allocate() hands out 64-byte aligned spans from a list of blocks; reset() forgets them all at once.
/// When a pass needed more than one block, reset() replaces the blocks by a single block of the high-water
/// size, so from the second training step on a pass allocates nothing from the heap.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

namespace matmem {

/// A bump allocator: 64-byte aligned spans from a list of blocks, all forgotten at once by reset().
class Arena {
 public:
  /// An arena whose first block, allocated on first use, holds `first_block_bytes` (later ones double).
  explicit Arena(std::size_t first_block_bytes = 1 << 20) : next_block_bytes_(first_block_bytes) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  /// Uninitialised storage for `count` elements of T, aligned to 64 bytes, valid until reset().
  template <class T>
  T* allocate(std::size_t count) {
    return static_cast<T*>(allocate_bytes(count * sizeof(T)));
  }
  /// Forgets every allocation; after a pass that needed several blocks, replaces them by one of their total size.
  void reset();

  /// Bytes handed out since the last reset().
  std::size_t bytes_in_use() const { return used_before_ + offset_; }
  /// Bytes held in blocks, in use or not.
  std::size_t bytes_reserved() const;
  /// Blocks held.
  std::size_t block_count() const { return blocks_.size(); }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  struct Block {
    std::unique_ptr<std::byte[], Free> memory;
    std::size_t size;
  };
  static Block make_block(std::size_t size, std::size_t reserved);  // throws Error when out of memory
  void* allocate_bytes(std::size_t bytes);

  std::vector<Block> blocks_;
  std::size_t current_ = 0;      // index of the block being filled
  std::size_t offset_ = 0;       // bytes used in blocks_[current_]
  std::size_t used_before_ = 0;  // bytes used in the blocks before current_
  std::size_t next_block_bytes_;
};

}  // namespace matmem
