// A one-line progress bar on a terminal; plain lines (one per update) otherwise; nothing when quiet.
#pragma once
#include <cstdint>

namespace matmem::tools {

class Progress {
 public:
  Progress(std::int64_t total, bool terminal, bool quiet = false)
      : total_(total), terminal_(terminal), quiet_(quiet) {}
  void update(std::int64_t step, double loss, double bits, double seconds_per_step);
  void finish();
  bool terminal() const { return terminal_ && !quiet_; }

 private:
  std::int64_t total_;
  bool terminal_;
  bool quiet_;
  bool drawn_ = false;
};

}  // namespace matmem::tools
