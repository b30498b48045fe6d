#include "matmem/models/training/schedule.hpp"

#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

double lr_scale(const Config& c, std::int64_t step, std::int64_t total) {
  const std::string& kind = c.str("lr.schedule");
  if (kind == "step") return std::pow(c.num("lr.step_factor"), double(step / c.integer("lr.step_every")));
  if (kind == "cosine") {
    const double e = c.num("lr.cosine_final");
    return e + (1 - e) * 0.5 * (1 + std::cos(std::numbers::pi * double(step) / double(std::max<std::int64_t>(total, 1))));
  }
  return 1.0;
}

}  // namespace matmem
