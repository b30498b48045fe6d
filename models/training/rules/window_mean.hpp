/// @file
/// WindowMean: costs taken in consecutive windows of a fixed number of steps (the curriculum's and
/// lr.solved_below's windows; windows do not overlap). Its count and sum are the rules' checkpoint state.
#pragma once
#include <cstdint>

namespace matmem {

/// Consecutive windows of `window` costs (see the file).
struct WindowMean {
  std::int64_t window = 0;  ///< the costs a window holds
  std::int64_t steps = 0;   ///< the costs in the current window so far
  double sum = 0;           ///< their sum
  /// Adds one cost; true, with the window's mean in `mean`, on the cost that completes a window, which then
  /// starts afresh.
  bool add(double cost, double& mean) {
    sum += cost;
    if (++steps < window) return false;
    mean = sum / double(window);
    steps = 0;
    sum = 0;
    return true;
  }
};

}  // namespace matmem
