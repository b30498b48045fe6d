#include "matmem/models/training/rules/registry.hpp"

#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/models/training/rules/curriculum.hpp"
#include "matmem/models/training/rules/early_stopping.hpp"
#include "matmem/models/training/rules/grad_outlier.hpp"
#include "matmem/models/training/rules/lr_solved.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

std::vector<std::unique_ptr<TrainingRule>> make_rules(const Config& config, const Task& task) {
  std::vector<std::unique_ptr<TrainingRule>> rules;
  auto add = [&](std::unique_ptr<TrainingRule> rule) {
    if (rule) rules.push_back(std::move(rule));
  };
  add(Curriculum::from_config(config, task));
  add(GradOutlier::from_config(config));
  add(SolvedDecay::from_config(config));
  add(EarlyStoppingRule::from_config(config));
  add(std::make_unique<BestParameters>());
  return rules;
}

void upgrade_rule_states(std::map<std::string, std::string>& metadata) {
  const auto early = metadata.find("early_stopping");
  if (metadata.count("best_parameters") || early == metadata.end()) return;
  EarlyStopping e;
  try {
    e.set_state(early->second);
  } catch (const Error&) {
    return;  // refused when early_stopping reads it, naming the checkpoint
  }
  if (e.best_step() >= 0) metadata["best_parameters"] = best_parameters_state(e.best_step(), e.best());
}

}  // namespace matmem
