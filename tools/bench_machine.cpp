#include "matmem/tools/bench_machine.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/sysfs.hpp"

namespace matmem::tools {
namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A file of cpu0's cache `index` in sysfs (runtime/sysfs.hpp).
std::string cache_file(int index, const char* name) {
  return sysfs_path(fmt::format("devices/system/cpu/cpu0/cache/index{}/{}", index, name));
}
// "32K" or "1024K" from sysfs, in bytes; 0 when absent.
std::int64_t cache_bytes(int index) {
  std::ifstream f(cache_file(index, "size"));
  std::string s;
  if (!(f >> s) || s.empty()) return 0;
  const char unit = s.back();
  const std::int64_t n = std::atoll(s.c_str());
  return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
}
// 1, 2, 3 from sysfs; 0 when absent.
int cache_level(int index) {
  std::ifstream f(cache_file(index, "level"));
  int l = 0;
  return f >> l ? l : 0;
}
std::string cache_text(int index) {
  std::ifstream type(cache_file(index, "type")), shared(cache_file(index, "shared_cpu_list"));
  const int l = cache_level(index);
  std::string t, cpus;
  if (l == 0 || !(type >> t)) return "";
  shared >> cpus;
  if (t == "Instruction") return "";
  return fmt::format("L{}{} {} KiB (cpus {})", l, t == "Data" ? "d" : "", cache_bytes(index) >> 10, cpus);
}

// The L2's size per core, or 1 MiB where /sys does not list it.
std::int64_t l2_bytes() {
  for (int k = 0; k < 8; ++k)
    if (cache_level(k) == 2 && cache_bytes(k) > 0) return cache_bytes(k);
  return std::int64_t(1) << 20;
}

// Independent multiply-add chains on the widest vectors the build targets, enough of them (12, each in its
// own register) to cover the FMA latency on both FMA ports.
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
}  // namespace

double fma_peak_gflops() {
  typedef float v16 __attribute__((vector_size(4 * kLanes)));
  const v16 a = v16{} + 0.999999f, b = v16{} + 1e-7f;
  v16 c0 = a, c1 = a + 1, c2 = a + 2, c3 = a + 3, c4 = a + 4, c5 = a + 5, c6 = a + 6, c7 = a + 7, c8 = a + 8,
      c9 = a + 9, c10 = a + 10, c11 = a + 11;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const std::int64_t iters = 2'000'000;
    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < iters; ++i) {
      c0 = c0 * a + b, c1 = c1 * a + b, c2 = c2 * a + b, c3 = c3 * a + b, c4 = c4 * a + b, c5 = c5 * a + b;
      c6 = c6 * a + b, c7 = c7 * a + b, c8 = c8 * a + b, c9 = c9 * a + b, c10 = c10 * a + b, c11 = c11 * a + b;
      asm volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));  // every chain stays live
      asm volatile("" : "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
    }
    best = std::max(best, 2.0 * kLanes * 12 * double(iters) / seconds_since(t0) / 1e9);
  }
  return best;
}

namespace {

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;
Buffer buffer(std::int64_t n) {
  auto* p = static_cast<float*>(std::aligned_alloc(64, std::size_t((n * 4 + 63) / 64 * 64)));
  if (!p) throw std::bad_alloc();
  std::fill(p, p + n, 1.0f);  // touched: no page faults in the timed passes
  return Buffer(p);
}

// Bytes per second of `kernel(pass)` moving `bytes` per pass; passes enough for about 256 MiB, best of 3.
template <class F>
double rate(std::int64_t bytes, F&& kernel) {
  const std::int64_t passes = std::max<std::int64_t>(1, (std::int64_t(256) << 20) / bytes);
  kernel(0);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = Clock::now();
    for (std::int64_t p = 0; p < passes; ++p) kernel(p);
    best = std::max(best, double(bytes) * double(passes) / seconds_since(t0));
  }
  return best;
}

struct Bandwidth {
  double read, write, copy;  // GB/s
};
// Over a working set of `bytes`: read and write one buffer of that size, copy between two of half of it.
Bandwidth bandwidth(std::int64_t bytes) {
  const std::int64_t n = bytes / 4 / 128 * 128, half = n / 2;
  Buffer x = buffer(n), y = buffer(n);
  float* __restrict px = x.get();
  float* __restrict py = y.get();
  Bandwidth b{};
  float sum[64] = {};
  b.read = rate(n * 4, [&](std::int64_t) {
    for (std::int64_t i = 0; i < n; i += 64)
      for (int j = 0; j < 64; ++j) sum[j] += px[i + j];
    asm volatile("" : : "r"(sum) : "memory");
  }) / 1e9;
  b.write = rate(n * 4, [&](std::int64_t pass) {
    const float v = float(pass);
    for (std::int64_t i = 0; i < n; ++i) py[i] = v;
    asm volatile("" : : "r"(py) : "memory");
  }) / 1e9;
  b.copy = rate(n * 4, [&](std::int64_t pass) {
    const float v = float(pass & 1);  // a sum, not a plain copy, so the loop is not a memcpy call
    for (std::int64_t i = 0; i < half; ++i) py[i] = px[i] + v;
    asm volatile("" : : "r"(py) : "memory");
  }) / 1e9;
  return b;
}
}  // namespace

double l2_stream_gbps() {
  const std::int64_t l2 = l2_bytes();
  double best = 0;
  for (std::int64_t kib = 128; (kib << 10) <= l2; kib *= 2) {
    const Bandwidth b = bandwidth(kib << 10);
    best = std::max({best, b.read, b.write, b.copy});
  }
  return best;
}

double stream_gbps_at(std::int64_t bytes) {
  const Bandwidth b = bandwidth(std::max<std::int64_t>(bytes, 16 << 10));
  return std::max({b.read, b.write, b.copy});
}

double sgemm_peak_gflops() {
  const std::int64_t n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  blas::gemm<float>(false, false, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
  const auto t0 = Clock::now();
  const int reps = 5;
  for (int k = 0; k < reps; ++k) blas::gemm<float>(false, false, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
  return 2.0 * double(n) * n * n * reps / seconds_since(t0) / 1e9;
}

void bench_machine(std::FILE* csv) {
  std::vector<std::string> caches;
  for (int k = 0; k < 8; ++k)
    if (std::string t = cache_text(k); !t.empty()) caches.push_back(t);
  fmt::print("one core of this machine\ncaches: {}\n",
             caches.empty() ? fmt::format("not listed in {}", sysfs_path("devices/system/cpu/cpu0/cache"))
                            : fmt::format("{}", fmt::join(caches, ", ")));
  fmt::print("peaks (float32): multiply-add loop {:.1f} GFLOP/s, SGEMM 1024^3 {:.1f} GFLOP/s\n", fma_peak_gflops(),
             sgemm_peak_gflops());
  const char* chosen = std::getenv("OPENBLAS_CORETYPE");
  fmt::print("OpenBLAS kernels: {}{}\n", blas::core_name(),
             chosen ? fmt::format(" (OPENBLAS_CORETYPE={})", chosen) : std::string(" (chosen by OpenBLAS)"));
  fmt::print("bandwidth, GB/s of bytes read + written (best of 3 passes of ~256 MiB):\n");
  fmt::print("{:>12} {:>9} {:>9} {:>9}\n", "working set", "read", "write", "copy");
  if (csv) fmt::print(csv, "bytes,read_gbs,write_gbs,copy_gbs\n");
  for (const std::int64_t kib : {16, 128, 512, 768, 2048, 8192, 24576, 65536, 262144}) {
    const Bandwidth b = bandwidth(kib << 10);
    fmt::print("{:>8} KiB {:>9.1f} {:>9.1f} {:>9.1f}\n", kib, b.read, b.write, b.copy);
    std::fflush(stdout);
    if (csv) fmt::print(csv, "{},{:.2f},{:.2f},{:.2f}\n", kib << 10, b.read, b.write, b.copy);
  }
}

}  // namespace matmem::tools
