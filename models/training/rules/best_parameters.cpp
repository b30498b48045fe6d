#include "matmem/models/training/rules/best_parameters.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/models/training/config.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"

namespace matmem {

namespace {
std::string best_path(const std::string& dir) { return (std::filesystem::path(dir) / "best.safetensors").string(); }
}  // namespace

void BestParameters::update(const Model& model, double score, std::int64_t step) {
  if (!(score < score_)) return;
  score_ = score;
  step_ = step;
  best_.clear();
  for (const auto& p : model.params()) best_.push_back(p->value);
}

void BestParameters::after_evaluation(const EvalReport& report, const Model& model) {
  update(model, report.score, report.step);
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

std::string best_parameters_state(std::int64_t step, double score) { return fmt::format("{} {:a}", step, score); }

std::optional<std::string> BestParameters::state() const {
  if (step_ < 0) return std::nullopt;
  return best_parameters_state(step_, score_);
}

void BestParameters::set_state(const std::optional<std::string>& text, std::int64_t step) {
  if (!text) return;
  std::int64_t at = -1;
  double score = 0;
  if (!parse_state_fields(*text, {&at, &score}) || at < 0 || at > step || std::isnan(score))
    throw Error(fmt::format("best_parameters \"{}\" is not a step up to the checkpoint's {} and a score", *text, step));
  step_ = at, score_ = score;
}

void BestParameters::save_files(const std::string& dir, const Model& model, const Config& config) const {
  if (!has() || (written_ == step_ && written_dir_ == dir)) return;
  TensorFile b;
  std::size_t k = 0;
  for (const auto& p : model.params()) b.tensors.emplace("param/" + p->name, best_[k++]);
  b.metadata = {{"format", "matmem-best-1"}, {"step", std::to_string(step_)}, {"config", config.values().dump()}};
  write_safetensors(best_path(dir), b);
  written_ = step_;
  written_dir_ = dir;
}

void BestParameters::load_files(const std::string& dir, const Model& model) {
  const std::string path = best_path(dir);
  if (step_ < 0 || !std::filesystem::exists(path)) return;
  TensorFile b = read_safetensors(path);
  auto format = b.metadata.find("format"), at = b.metadata.find("step");
  if (format == b.metadata.end() || format->second != "matmem-best-1" || at == b.metadata.end())
    throw Error(fmt::format("{}: not a matmem best-parameters file (format matmem-best-1 and a step expected)", path));
  if (at->second != std::to_string(step_)) return;
  std::vector<Tensor> best;
  for (const auto& p : model.params()) {
    auto it = b.tensors.find("param/" + p->name);
    if (it == b.tensors.end() || it->second.shape() != p->value.shape() || it->second.dtype() != p->value.dtype())
      throw Error(fmt::format("{}: parameter {} is missing or not {} {}", path, p->name, p->value.shape().str(),
                              name_of(p->value.dtype())));
    best.push_back(it->second);
  }
  best_ = std::move(best);
  written_ = step_;
  written_dir_ = dir;
}

bool restore_best(Trainer& trainer) {
  const BestParameters* best = trainer.rule<BestParameters>();
  return best && best->restore(trainer.model());
}

std::string use_best_parameters(Trainer& trainer, bool last) {
  if (last || !restore_best(trainer)) return fmt::format("the last parameters (step {})", trainer.steps_done());
  const BestParameters& b = *trainer.rule<BestParameters>();
  return fmt::format("the parameters of step {} (best {} {} {:.4f})", b.best_step(),
                     trainer.split_task() ? "validation" : "held-out", trainer.config().str("eval.metric"), b.best());
}

}  // namespace matmem
