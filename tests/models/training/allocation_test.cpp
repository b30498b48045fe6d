// In the steady state of training (every sequence length seen once), a step allocates nothing from the
// heap: this program replaces the global operator new with a counting one.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "models/training/trainer.hpp"
#include "small_config.hpp"

namespace {
std::atomic<long> allocations{0};
std::atomic<bool> counting{false};
}  // namespace

void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace matmem;

TEST_CASE("training steps allocate nothing once every sequence length has been seen", "[trainer][memory]") {
  for (const char* model : {"matntm", "matlstm"})
    for (const char* threads : {"1", "2"}) {  // 2: the batch split over a ThreadTeam
      INFO(model << ", threads " << threads);
      Config c = testing::small_config(model, 3, 8);
      c.set("clip.norm", "1", "test");
      c.set("threads", threads, "test");
      Trainer t(c);
      for (int k = 0; k < 60; ++k) t.step();  // P(a length of 1..3 unseen in 60 draws) < 1e-10
      allocations = 0;
      counting = true;
      for (int k = 0; k < 30; ++k) t.step();
      counting = false;
      CHECK(allocations == 0);
    }
}

TEST_CASE("the counting allocator counts", "[trainer][memory]") {
  allocations = 0;
  counting = true;
  auto* p = new std::vector<int>(10);
  counting = false;
  delete p;
  CHECK(allocations >= 1);
}
