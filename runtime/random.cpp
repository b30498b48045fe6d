#include "matmem/runtime/random.hpp"

#include <cmath>
#include <numbers>

namespace matmem {
namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& w : s_) w = splitmix64(seed);
}

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

std::uint64_t Rng::uniform_int(std::uint64_t n) {
  unsigned __int128 m = (unsigned __int128)next() * n;
  std::uint64_t low = std::uint64_t(m);
  if (low < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = (unsigned __int128)next() * n;
      low = std::uint64_t(m);
    }
  }
  return std::uint64_t(m >> 64);
}

std::int64_t Rng::uniform_int(std::int64_t lo, std::int64_t hi) {
  return lo + std::int64_t(uniform_int(std::uint64_t(hi - lo + 1)));
}

double Rng::normal() {
  const double u1 = uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
}
double Rng::normal(double mean, double stddev) { return mean + stddev * normal(); }

Rng Rng::split(std::uint64_t label) {
  std::uint64_t x = next() ^ (label * 0xd1b54a32d192ed03ULL);
  return Rng(splitmix64(x));
}

}  // namespace matmem
