#include "runtime/random.hpp"

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
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& w : s_) w = splitmix64(seed);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }
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
bool Rng::bernoulli(double p) { return uniform() < p; }

Rng Rng::split(std::uint64_t label) {
  std::uint64_t x = next() ^ (label * 0xd1b54a32d192ed03ULL);
  return Rng(splitmix64(x));
}

}  // namespace matmem
