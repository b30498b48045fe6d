/// @file
/// Rng: the seeded random number generator behind every random draw in matmem.
///
/// Algorithm (fixed, so a seed means the same numbers on every machine and build):
///   * state: xoshiro256** (Blackman & Vigna, 2018), four 64-bit words;
///   * seeding: the four words are successive outputs of splitmix64 started at the seed;
///   * uniform()      = (next() >> 11) * 2^-53, in [0, 1);
///   * bernoulli(p)   = uniform() < p; coin() the same for p = 1/2, as 1 or 0;
///   * uniform_int(n) = Lemire's multiply-shift with rejection, unbiased, in [0, n);
///   * normal()       = Box-Muller, sqrt(-2 ln(1 - u1)) * cos(2 pi u2), one value per two uniforms (no cache,
///                      so the whole state is the four words and a checkpoint stores exactly that).
#pragma once
#include <array>
#include <cstdint>

namespace matmem {

/// The seeded generator: xoshiro256**, seeded by splitmix64 (algorithm and draws: see the file).
class Rng {
 public:
  /// The generator's whole state, four 64-bit words (what a checkpoint stores).
  using State = std::array<std::uint64_t, 4>;

  /// A generator whose state is four successive outputs of splitmix64 started at `seed`.
  explicit Rng(std::uint64_t seed = 0);

  /// The next 64 random bits. Inline: a task draws a bit per element of every batch it samples, on the
  /// training step's serial path.
  std::uint64_t next() {
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
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  ///< [0, 1)
  double uniform(double lo, double hi);              ///< [lo, hi)
  std::uint64_t uniform_int(std::uint64_t n);        ///< [0, n)
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);  ///< [lo, hi], inclusive
  double normal();                                   ///< N(0, 1)
  double normal(double mean, double stddev);         ///< N(mean, stddev²)
  /// True with probability p.
  bool bernoulli(double p) { return uniform() < p; }
  /// bernoulli(0.5) without the branch: uniform() < 1/2 exactly when next()'s top bit is 0. A task draws its
  /// random bits with it (64K a batch of 256 copy sequences), as 0 or 1 with no unpredictable branch.
  std::uint64_t coin() { return (next() >> 63) ^ 1; }

  /// Independent stream derived from this one's seed and a label (e.g. one per task or per worker); draws
  /// one number from this one.
  Rng split(std::uint64_t label);

  /// The four words of the state.
  const State& state() const { return s_; }
  /// Restores a state taken with state(): the draws that follow are the ones that followed it.
  void set_state(const State& s) { s_ = s; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_;
};

}  // namespace matmem
