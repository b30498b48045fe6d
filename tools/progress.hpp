// A one-line progress bar on a terminal; plain lines (one per update) otherwise.
#pragma once
#include <cstdint>

namespace matmem::tools {

class Progress {
 public:
  Progress(std::int64_t total, bool terminal) : total_(total), terminal_(terminal) {}
  void update(std::int64_t step, double loss, double bits, double seconds_per_step);
  void finish();

 private:
  std::int64_t total_;
  bool terminal_;
  bool drawn_ = false;
};

}  // namespace matmem::tools
