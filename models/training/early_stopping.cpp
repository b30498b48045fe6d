#include "matmem/models/training/early_stopping.hpp"

#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

bool EarlyStopping::record(std::int64_t step, double error) {
  if (error < best_) {
    best_ = error;
    best_step_ = step;
    bad_ = 0;
  } else {
    ++bad_;
  }
  if (patience_ > 0 && bad_ >= patience_) stopped_ = true;
  return stopped_;
}

std::string EarlyStopping::state() const {
  return fmt::format("{} {} {} {}", best_, best_step_, bad_, stopped_ ? 1 : 0);
}

void EarlyStopping::set_state(const std::string& text) {
  std::istringstream in(text);
  std::string best;
  std::int64_t step = 0, bad = 0, stopped = 0;
  if (!(in >> best >> step >> bad >> stopped) || bad < 0 || step < -1 || (stopped != 0 && stopped != 1))
    throw Error(fmt::format("early stopping state \"{}\" is not \"best best_step since_best stopped\"", text));
  best_ = best == "inf" ? std::numeric_limits<double>::infinity() : std::stod(best);
  best_step_ = step, bad_ = bad, stopped_ = stopped == 1;
}

bool BestParameters::update(const Model& model, double score, std::int64_t step) {
  const std::int64_t before = rule_.best_step();
  const bool stop = rule_.record(step, score);
  if (rule_.best_step() != before) {
    best_.clear();
    for (const auto& p : model.params()) best_.push_back(p->value);
  }
  return stop;
}

bool BestParameters::restore(Model& model) const {
  if (best_.empty()) return false;
  std::size_t k = 0;
  for (auto& p : model.params()) {
    const Tensor& b = best_[k++];
    std::memcpy(p->value.raw(), b.raw(), std::size_t(b.numel()) * size_of(b.dtype()));
  }
  return true;
}

}  // namespace matmem
