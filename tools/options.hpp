// The checks of matmem's numeric command-line options. Each option names its bounds here, with their reason;
// a value outside them, or one that is not a number of that kind, is refused by the parser with a message
// that names the option, e.g. `--steps: -5 is out of range: expected a whole number from 1 to 1000000000`.
#pragma once
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace matmem::tools {
// Training steps: a thousand million is months at the fastest step; more is a typo.
constexpr std::int64_t kMaxSteps = 1'000'000'000;
// Seeds are stored in config.json as JSON integers: any non-negative 64-bit signed value.
constexpr std::int64_t kMaxSeed = std::numeric_limits<std::int64_t>::max();
// Threads a training step splits its batch over.
constexpr std::int64_t kMaxThreads = 64;
// eval: a sequence length or item count (one sequence of 10,000 frames already unrolls 20,000 time steps),
// and batches per size.
constexpr std::int64_t kMaxEvalSize = 10'000;
constexpr std::int64_t kMaxEvalBatches = 100'000;
// bench: timed and warm-up steps, measurements per op, seconds per measurement.
constexpr std::int64_t kMaxBenchSteps = 1'000'000;
constexpr std::int64_t kMaxBenchRepeats = 1'000;
constexpr double kMaxBenchSeconds = 600;
// capacity: the side of the N×N state (the exact curve solves Stein equations of (N²)×(N²) Kronecker
// factors), the neurons of a vector net, lags, the queue's truncation depth and horizon, sweep samples.
constexpr std::int64_t kMaxCapacitySide = 64;
constexpr std::int64_t kMaxCapacityNeurons = 4096;
constexpr std::int64_t kMaxCapacityLag = 100'000;
constexpr std::int64_t kMaxCapacityDepth = 1'000'000;
constexpr std::int64_t kMaxCapacityHorizon = 100'000;
constexpr std::int64_t kMaxCapacitySamples = 10'000;
// capacity: noise variances ε₁, ε₂ (> 0) and the non-normal part's strength: beyond these the curves
// underflow to 0 or overflow the covariances.
constexpr double kMaxCapacityNoise = 1e6;
constexpr double kMaxCapacityStrength = 1e3;

// A whole number in [lo, hi], written in decimal; the parser stores it into the option's integer type.
inline CLI::Validator whole_number(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || end == text.c_str() || *end != '\0')
          return fmt::format("{} is not a whole number (expected one from {} to {})", text, lo, hi);
        if (errno == ERANGE || v < lo || v > hi)
          return fmt::format("{} is out of range: expected a whole number from {} to {}", text, lo, hi);
        return "";
      },
      fmt::format("INT in {}..{}", lo, hi));
}

// A finite real number x with lo ≤ x ≤ hi, or lo < x when `open_below` (a positive quantity: lo = 0).
inline CLI::Validator real_number(double lo, double hi, bool open_below = false) {
  return CLI::Validator(
      [lo, hi, open_below](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const std::string range = fmt::format("{}{} to {}", open_below ? "above " : "", lo, hi);
        if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v))
          return fmt::format("{} is not a finite number (expected one {})", text, range);
        if (v > hi || v < lo || (open_below && v == lo))
          return fmt::format("{} is out of range: expected a number {}", text, range);
        return "";
      },
      fmt::format("NUMBER {}{}..{}", open_below ? ">" : "", lo, hi));
}
}  // namespace matmem::tools
