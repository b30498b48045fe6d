#include "matmem/tools/progress.hpp"

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace matmem::tools {

void Progress::update(std::int64_t step, double loss, double bits, double seconds_per_step) {
  if (quiet_) return;
  const double eta = double(total_ - step) * seconds_per_step;
  if (!terminal_) {
    fmt::print("step {:>7}/{}  loss {:.4f}  {} {:7.2f}  {:.2f} ms/step\n", step, total_, loss, cost_, bits,
               1e3 * seconds_per_step);
    std::fflush(stdout);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = int(double(kWidth) * double(step) / double(total_));
  fmt::print("\r[{}{}] {:>7}/{}  loss {:.4f}  {} {:7.2f}  {:.2f} ms/step  eta {:.0f}s ",
             std::string(filled, '#'), std::string(kWidth - filled, '.'), step, total_, loss, cost_, bits,
             1e3 * seconds_per_step, eta);
  std::fflush(stdout);
  drawn_ = true;
}

void Progress::finish() {
  if (terminal_ && drawn_) fmt::print("\n");
  drawn_ = false;  // a line printed after this one does not share the bar's
}

}  // namespace matmem::tools
