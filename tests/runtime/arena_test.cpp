#include <catch2/catch.hpp>

#include <cstdint>

#include "matmem/runtime/arena.hpp"

using namespace matmem;

TEST_CASE("arena spans are 64-byte aligned and disjoint", "[arena]") {
  Arena arena(256);
  float* a = arena.allocate<float>(3);
  double* b = arena.allocate<double>(100);  // larger than the first block: a new block
  float* c = arena.allocate<float>(1);
  for (void* p : {(void*)a, (void*)b, (void*)c}) CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
  CHECK(arena.block_count() >= 2);
  CHECK((char*)c != (char*)a);
}

TEST_CASE("reset coalesces the blocks so the next pass fits in one", "[arena]") {
  Arena arena(128);
  for (int k = 0; k < 10; ++k) arena.allocate<double>(50);
  CHECK(arena.block_count() > 1);
  arena.reset();
  CHECK(arena.block_count() == 1);
  const std::size_t reserved = arena.bytes_reserved();
  for (int k = 0; k < 10; ++k) arena.allocate<double>(50);
  CHECK(arena.block_count() == 1);
  CHECK(arena.bytes_reserved() == reserved);
  CHECK(arena.bytes_in_use() == 10 * 448);  // 400 bytes rounded up to 64
}
