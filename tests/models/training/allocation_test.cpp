// In the steady state of training (every sequence length seen once), a step allocates nothing from the
// heap. This program counts every way of getting heap memory, on every thread: it defines the C allocator
// (malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign, valloc, pvalloc) over glibc's own
// __libc_* functions, so the dynamic linker binds the library's and its dependencies' calls (the arena's
// malloc and aligned_alloc, OpenBLAS, libstdc++) to them, and replaces every form of the global operator
// new. Under AddressSanitizer or ThreadSanitizer, whose runtimes own malloc, the sanitizer's allocation hook
// counts instead.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>
#include <vector>

#include <malloc.h>

#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/thread_team.hpp"
#include "small_config.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MATMEM_SANITIZER_ALLOCATOR 1
// From the sanitizer runtime (sanitizer/allocator_interface.h, which not every compiler ships).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));
#endif

namespace {
// Constant-initialised and lock-free: safe to touch from the first malloc of the process and from any thread.
std::atomic<long> allocations{0};
std::atomic<bool> counting{false};

inline void note() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}

// Keeps an allocation the test makes from being optimised away.
void* volatile sink = nullptr;
void* kept(void* p) {
  sink = p;
  return p;
}
}  // namespace

#ifdef MATMEM_SANITIZER_ALLOCATOR
namespace {
void on_malloc(const volatile void*, std::size_t) { note(); }
void on_free(const volatile void*) {}
const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(&on_malloc, &on_free);
}  // namespace
#else
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* __libc_valloc(std::size_t);
void* __libc_pvalloc(std::size_t);
void __libc_free(void*);

void* malloc(std::size_t n) noexcept {
  note();
  return __libc_malloc(n);
}
void* calloc(std::size_t count, std::size_t n) noexcept {
  note();
  return __libc_calloc(count, n);
}
void* realloc(void* p, std::size_t n) noexcept {
  note();  // a realloc may move the block: an allocation as far as the steady state is concerned
  return __libc_realloc(p, n);
}
void free(void* p) noexcept { __libc_free(p); }
void* aligned_alloc(std::size_t alignment, std::size_t n) noexcept {
  note();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t n) noexcept {
  note();
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void* memalign(std::size_t alignment, std::size_t n) noexcept {
  note();
  return __libc_memalign(alignment, n);
}
void* valloc(std::size_t n) noexcept {
  note();
  return __libc_valloc(n);
}
void* pvalloc(std::size_t n) noexcept {
  note();
  return __libc_pvalloc(n);
}
}  // extern "C"
#endif

// Every replaceable form of operator new, each counted once.
namespace {
void* heap(std::size_t n, std::size_t alignment = 0) {
  if (n == 0) n = 1;
#ifdef MATMEM_SANITIZER_ALLOCATOR
  // the sanitizer's hook counts the malloc
  return alignment ? std::aligned_alloc(alignment, (n + alignment - 1) / alignment * alignment) : std::malloc(n);
#else
  note();
  return alignment ? __libc_memalign(alignment, n) : __libc_malloc(n);
#endif
}
void* heap_or_throw(std::size_t n, std::size_t alignment = 0) {
  if (void* p = heap(n, alignment)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return heap_or_throw(n); }
void* operator new[](std::size_t n) { return heap_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return heap(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return heap(n); }
void* operator new(std::size_t n, std::align_val_t a) { return heap_or_throw(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return heap_or_throw(n, std::size_t(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return heap(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return heap(n, std::size_t(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

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

namespace {
// The allocations `f` makes, counted.
template <class F>
long count(F&& f) {
  allocations = 0;
  counting = true;
  f();
  counting = false;
  return allocations.load();
}
struct alignas(128) Wide {
  char bytes[128];
};
}  // namespace

TEST_CASE("the counting allocator counts every way of allocating, each once", "[trainer][memory]") {
  // the C allocator, as the arena (malloc, aligned_alloc) and C libraries use it
  CHECK(count([] { std::free(kept(std::malloc(100))); }) == 1);
  CHECK(count([] { std::free(kept(std::calloc(10, 10))); }) == 1);
  CHECK(count([] {
          void* p = std::malloc(16);
          std::free(kept(std::realloc(p, 4096)));
        }) == 2);
  CHECK(count([] { std::free(kept(std::aligned_alloc(64, 4096))); }) == 1);
  CHECK(count([] {
          void* p = nullptr;
          if (posix_memalign(&p, 64, 100) == 0) std::free(kept(p));
        }) == 1);
  CHECK(count([] { std::free(kept(memalign(64, 100))); }) == 1);
  CHECK(count([] { std::free(kept(valloc(100))); }) == 1);
  // every form of operator new
  CHECK(count([] { ::operator delete(kept(::operator new(10))); }) == 1);
  CHECK(count([] { ::operator delete[](kept(::operator new[](10))); }) == 1);
  CHECK(count([] { ::operator delete(kept(::operator new(10, std::nothrow))); }) == 1);
  CHECK(count([] { ::operator delete[](kept(::operator new[](10, std::nothrow))); }) == 1);
  CHECK(count([] { ::operator delete(kept(::operator new(10, std::align_val_t(128))), std::align_val_t(128)); }) == 1);
  CHECK(count([] { ::operator delete[](kept(::operator new[](10, std::align_val_t(128))), std::align_val_t(128)); }) == 1);
  CHECK(count([] {
          ::operator delete(kept(::operator new(10, std::align_val_t(128), std::nothrow)), std::align_val_t(128));
        }) == 1);
  CHECK(count([] {
          ::operator delete[](kept(::operator new[](10, std::align_val_t(128), std::nothrow)), std::align_val_t(128));
        }) == 1);
  CHECK(count([] {
          auto* w = new Wide;  // aligned new through a new-expression
          kept(w);
          delete w;
        }) == 1);
  CHECK(count([] {
          std::vector<int> v(10);
          kept(v.data());
        }) == 1);
}

TEST_CASE("the counting allocator counts allocations made on other threads", "[trainer][memory]") {
  ThreadTeam team(2);
  CHECK(count([&] { team.run([](int) { std::free(kept(std::malloc(64))); }); }) == 2);
}
