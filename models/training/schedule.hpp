// Learning-rate schedules (config key lr.schedule): the factor the configured lr is multiplied by for
// training step k (0-based: the step that makes k + 1 steps done) of a run of T steps.
//   constant:  1
//   step:      f^⌊k / n⌋                      (lr.step_every = n, lr.step_factor = f)
//   cosine:    e + (1 − e) · (1 + cos(π k / T)) / 2   (lr.cosine_final = e: the factor the last steps approach)
// The factor depends on k (and T) alone, so a resumed run takes the steps an uninterrupted one would; a
// resume with a new --steps total changes T, and with it a cosine schedule's later steps.
#pragma once
#include <cstdint>

namespace matmem {

class Config;

// The keys' ranges are declared with them (config.cpp) and checked by check_config().
double lr_scale(const Config& config, std::int64_t step, std::int64_t total);

}  // namespace matmem
