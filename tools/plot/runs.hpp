// Learning curves of training runs, as `matmem plot` draws them: each run directory's metrics.csv (step,
// seconds, loss, bits_per_sequence, …) and config.json (the resolved config); runs whose configs differ
// only in seed (or in keys that leave the learning curve alone: steps, threads, logging, checkpointing) form
// one group, drawn as the median over its runs with a band (min–max or interquartile range).
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace matmem::tools::plot {

struct Run {
  std::filesystem::path dir;
  std::map<std::string, std::string> config;  // key -> its JSON text, e.g. "model" -> "\"matntm\""
  std::vector<double> step, loss, bits;       // NaN where a window held only skipped steps
  std::vector<double> seconds;                // as logged (each process of a resumed run counts from 0); NaN
                                              // when the file has no seconds column
  std::string model() const;                  // config's model, unquoted
  std::string task() const;
  std::string seed() const;
  std::int64_t batch() const;                 // config's batch: sequences a step
};

// Reads DIR/metrics.csv and DIR/config.json; throws naming the file (and line) when either is missing or
// malformed.
Run read_run(const std::filesystem::path& dir);

struct RunGroup {
  std::string label;               // model and task, plus the config keys in which groups differ
  std::vector<std::size_t> runs;   // indices into the runs given
};
// Groups in order of first appearance.
std::vector<RunGroup> group_runs(const std::vector<Run>& runs);

enum class Spread { minmax, iqr };
struct Curve {
  std::vector<double> x, median, lo, hi;
};
// Per x present in any series: the median of the values there and the spread (min–max, or the 25th and 75th
// percentiles, linearly interpolated); NaN values are left out.
Curve aggregate(const std::vector<std::vector<double>>& x, const std::vector<std::vector<double>>& y, Spread spread);

// Centred moving average over `window` points (shrinking at the ends); NaN points are left out of each mean.
// A window of 1 returns y.
std::vector<double> smooth(const std::vector<double>& y, int window);

}  // namespace matmem::tools::plot
