/// @file
/// The training rules, registered in one place: make_rules() builds a run's rules from its config, in the
/// order the trainer runs them at every point of a step (models/training/README.md, "Training rules"):
///
///   1. curriculum       (curriculum.*)      the largest size a step draws
///   2. grad_outlier     (grad.outlier*)     skips the update of a step with an outlier gradient norm
///   3. lr_solved        (lr.solved_*)       the learning rate × lr.solved_factor once solved
///   4. early_stopping   (eval.patience)     stops after evaluations without a better score
///   5. best_parameters  (eval.*)            keeps the parameters of the best evaluation (best.safetensors)
///
/// A rule whose key turns it off is not in the list; early_stopping and best_parameters always are (without
/// evaluations they do nothing). A new rule is one file in this folder, one line here, and its test.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "matmem/models/tasks/tasks.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rules/rule.hpp"

namespace matmem {

/// The rules of `config` on `task`, in the order above; throws Error naming the key of a bad value.
std::vector<std::unique_ptr<TrainingRule>> make_rules(const Config& config, const Task& task);

/// A checkpoint's metadata in the rules' keys of this version: a checkpoint of earlier versions kept the best
/// parameters' step and score only in early_stopping's state, from which best_parameters' is written.
void upgrade_rule_states(std::map<std::string, std::string>& metadata);

}  // namespace matmem
