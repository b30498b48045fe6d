/// @file
/// The models and tasks `matmem train` knows by name, made from a resolved Config. A user's own model
/// joins with register_model() and is then trained with the same trainer and tasks.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"
#include "matmem/models/training/config.hpp"

namespace matmem {

/// Makes a model for `task` (its frame and output sizes) from the config's model.* keys.
using ModelFactory =
    std::function<std::unique_ptr<Model>(const Config& config, const Task& task, DType dtype, std::uint64_t seed)>;

/// Adds a model under `name` (`matmem train --model NAME`, Config's "model" key); throws if the name is taken.
void register_model(const std::string& name, ModelFactory factory);
/// The registered models' names.
std::vector<std::string> model_names();
/// The registered name a model is known by: an alias (`ntm`, the MatNTM's earlier name) maps to it, any other
/// name is returned as it is. Config stores the model under this name.
std::string canonical_model_name(const std::string& name);
/// The model the config's "model" key names, for `task`, seeded with the config's seed.
std::unique_ptr<Model> make_model(const Config& config, const Task& task, DType dtype = DType::f32);
/// The task the config's "task" key names, made from its task.* keys.
std::unique_ptr<Task> make_task(const Config& config);

/// The built-in models' config keys (lstm.*, rnn.*, ffn.*, gamma.*, fw.*, irnn.*, cln.*, ntm.*, controller.*,
/// dnc.*), each declared once beside its model's factory; config_keys() lists them. A user's model declares its
/// own with register_config_key().
const std::vector<ConfigKey>& builtin_model_keys();

/// Makes a task from the config's task.* keys (and batch); a user's own task joins with register_task().
using TaskFactory = std::function<std::unique_ptr<Task>(const Config& config)>;

/// Registers task `name`, made by make_task() when the config's `task` is `name`. Throws Error when a built-in
/// or registered task has that name already.
void register_task(const std::string& name, TaskFactory factory);

/// Every task make_task() knows: the built-in ones, then the registered ones in the order registered.
std::vector<std::string> task_names();

}  // namespace matmem
