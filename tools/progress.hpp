// A one-line progress bar on a terminal; plain lines (one per update) otherwise; nothing when quiet.
#pragma once
#include <cstdint>

namespace matmem::tools {

class Progress {
 public:
  // `cost`: the task's cost as printed (cost_name of its TargetKind, models/tasks/tasks.hpp).
  Progress(std::int64_t total, bool terminal, bool quiet = false, const char* cost = "bits/seq")
      : total_(total), terminal_(terminal), quiet_(quiet), cost_(cost) {}
  void update(std::int64_t step, double loss, double bits, double seconds_per_step);
  void finish();  // ends the bar's line (if drawn); the next update() draws a new one
  bool terminal() const { return terminal_ && !quiet_; }

 private:
  std::int64_t total_;
  bool terminal_;
  bool quiet_;
  const char* cost_;
  bool drawn_ = false;
};

}  // namespace matmem::tools
