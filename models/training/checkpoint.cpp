// Trainer's checkpoints: save() writes one atomically, resume() restores a run from one (and upgrades what an
// earlier version wrote), bit for bit.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "matmem/models/plugin.hpp"
#include "matmem/models/training/rules/early_stopping.hpp"
#include "matmem/models/training/rules/registry.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"

namespace matmem {

void Trainer::save(const std::string& dir) const {
  std::filesystem::create_directories(dir);
  const std::string path = (std::filesystem::path(dir) / "checkpoint.safetensors").string();
  const auto refuse = [&](const std::string& what) {
    throw TrainingError(fmt::format("checkpoint {}: not written: {} holds a NaN or Inf", path, what));
  };
  for (const auto& p : model_->params())
    if (!p->value.all_finite()) refuse("parameter " + p->name);
  for (const auto& [name, t] : optimizer_->state_tensors())
    if (!t->all_finite()) refuse("optimiser state " + name);
  TensorFile f;
  for (const auto& p : model_->params()) f.tensors.emplace("param/" + p->name, p->value);
  for (const auto& [name, t] : optimizer_->state_tensors()) f.tensors.emplace("optim/" + name, *t);
  const Rng::State& s = data_rng_.state();
  f.metadata = {{"format", "matmem-checkpoint-1"},
                {"step", std::to_string(step_)},
                {"optimizer", optimizer_->name()},
                {"optimizer_steps", std::to_string(optimizer_->steps())},
                {"rng", fmt::format("{} {} {} {}", s[0], s[1], s[2], s[3])},
                {"nonfinite_skips", std::to_string(skipped_)},
                {"config", config_.values().dump()}};
  if (stopped()) f.metadata["stopped"] = "true";  // a rule ended the run (stopped_in)
  // The rules' files first: a checkpoint never names a file that is not on disk.
  for (const auto& r : rules_) {
    r->save_files(dir, *model_, config_);
    if (std::optional<std::string> state = r->state()) f.metadata[r->name()] = std::move(*state);
  }
  write_safetensors(path, f);
}

namespace {
// Every parameter of `model` from the file's "param/NAME" tensors, refused (naming `where` and the parameter) when
// one is missing or of another shape or element type: a resume's and an init's.
void set_parameters(Model& model, const TensorFile& f, const std::string& where) {
  for (auto& p : model.params()) {
    const auto it = f.tensors.find("param/" + p->name);
    if (it == f.tensors.end())
      throw Error(fmt::format("{}: parameter {} of model {} is missing", where, p->name, model.name()));
    if (it->second.shape() != p->value.shape() || it->second.dtype() != p->value.dtype())
      throw Error(fmt::format("{}: parameter {} is {} {} there, {} {} in this run's model", where, p->name,
                              it->second.shape().str(), name_of(it->second.dtype()), p->value.shape().str(),
                              name_of(p->value.dtype())));
    p->value = it->second;
  }
}

// A checkpoint's config in the keys of this version: task.graph.patience = p of earlier versions (the graph
// task's early stopping on the validation loss after every step) is eval.patience = p with eval.interval 1
// and eval.metric loss. Text that is not a JSON object is left for merge_json_text to refuse.
std::string upgraded_config(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("task.graph.patience")) return text;
  if (j.value("task", "") == "graph") {
    j["eval.patience"] = j["task.graph.patience"];
    j["eval.interval"] = 1;
    j["eval.metric"] = "loss";
  }
  j.erase("task.graph.patience");
  return j.dump();
}
}  // namespace

std::unique_ptr<Trainer> Trainer::resume(const std::string& dir, std::int64_t steps, std::int64_t threads,
                                         const Communicator* ranks, std::span<const std::string> sets) {
  const std::string path = (std::filesystem::path(dir) / "checkpoint.safetensors").string();
  TensorFile f = read_safetensors(path);
  auto meta = [&](const char* key) -> const std::string& {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end()) throw Error(fmt::format("checkpoint {}: metadata {} is missing", path, key));
    return it->second;
  };
  if (meta("format") != "matmem-checkpoint-1")
    throw Error(fmt::format("checkpoint {}: format {} (matmem-checkpoint-1 expected)", path, meta("format")));
  check_plugins_loaded(meta("config"), fmt::format("checkpoint {}", path));
  Config config;
  config.merge_json_text(upgraded_config(meta("config")), fmt::format("checkpoint {} (config)", path));
  if (steps > 0) {
    config.set_json("steps", steps, "--steps");
    config.set_json("epochs", 0, "--steps");  // the new total counts steps
  }
  if (threads > 0) config.set_json("threads", threads, "--threads");
  for (const std::string& set : sets) {
    const std::string key = set.substr(0, set.find('='));
    if (std::find(std::begin(kResumeKeys), std::end(kResumeKeys), key) == std::end(kResumeKeys))
      throw Error(fmt::format("--set {} with --resume: a resumed run may change only {}; {} would change the model, "
                              "the task or its data (start a new run instead)",
                              set, fmt::join(std::begin(kResumeKeys), std::end(kResumeKeys), ", "), key));
    config.assign(set, "--set");
  }
  std::unique_ptr<Trainer> t(new Trainer(config, ranks, /*from_checkpoint=*/true));
  set_parameters(*t->model_, f, "checkpoint " + path);
  std::size_t used = t->model_->params().size();
  for (auto& [name, tensor] : t->optimizer_->state_tensors()) {
    auto it = f.tensors.find("optim/" + name);
    if (it == f.tensors.end()) throw Error(fmt::format("checkpoint {}: optimiser state {} is missing", path, name));
    if (it->second.shape() != tensor->shape() || it->second.dtype() != tensor->dtype())
      throw Error(fmt::format("checkpoint {}: optimiser state {} is {} {} there, {} {} here", path, name,
                              it->second.shape().str(), name_of(it->second.dtype()), tensor->shape().str(),
                              name_of(tensor->dtype())));
    *tensor = it->second;
    ++used;
  }
  if (used != f.tensors.size())
    throw Error(fmt::format("checkpoint {}: holds {} tensors, the model and optimiser use {} (a different model?)",
                            path, f.tensors.size(), used));
  Rng::State s;
  if (std::sscanf(meta("rng").c_str(), "%lu %lu %lu %lu", &s[0], &s[1], &s[2], &s[3]) != 4)
    throw Error(fmt::format("checkpoint {}: rng state \"{}\" is not four integers", path, meta("rng")));
  t->data_rng_.set_state(s);
  // A count in the metadata: a whole number ≥ 0, written in decimal.
  auto count = [&](const std::string& key, const std::string& text) {
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0)
      throw Error(fmt::format("checkpoint {}: {} \"{}\" is not a whole number ≥ 0", path, key, text));
    return v;
  };
  t->step_ = count("step", meta("step"));
  if (auto it = f.metadata.find("nonfinite_skips"); it != f.metadata.end())
    t->skipped_ = count("nonfinite_skips", it->second);
  t->optimizer_->set_steps(count("optimizer_steps", meta("optimizer_steps")));
  // The rules' states, each under its name (a rule not in the checkpoint is told so), then their files.
  upgrade_rule_states(f.metadata);
  for (const auto& r : t->rules_) {
    const auto it = f.metadata.find(r->name());
    try {
      r->set_state(it == f.metadata.end() ? std::nullopt : std::optional<std::string>(it->second), t->step_);
    } catch (const Error& e) {
      throw Error(fmt::format("checkpoint {}: {}", path, e.what()));
    }
    r->load_files(dir, *t->model_);
  }
  for (const auto& r : t->rules_) {  // what they said of a fresh run's start is not this run's
    r->take_messages();
    r->begin(t->step_);
  }
  return t;
}

void Trainer::start_from(const std::string& source) {
  const std::filesystem::path p(source);
  const std::string path = std::filesystem::is_directory(p) ? (p / "checkpoint.safetensors").string() : source;
  if (!std::filesystem::exists(path))
    throw Error(fmt::format("init {}: no such {} (a run directory holding checkpoint.safetensors, or such a file)",
                            source, std::filesystem::is_directory(p) ? "checkpoint" : "run directory or file"));
  const TensorFile f = read_safetensors(path);
  const auto format = f.metadata.find("format");
  if (format == f.metadata.end() || (format->second != "matmem-checkpoint-1" && format->second != "matmem-best-1"))
    throw Error(fmt::format("init {}: not a matmem checkpoint or best-parameters file (format {})", path,
                            format == f.metadata.end() ? "missing" : format->second));
  set_parameters(*model_, f, "init " + path);
  for (const auto& [name, tensor] : f.tensors)
    if (name.rfind("param/", 0) == 0 && !model_->params().contains(name.substr(6)))
      throw Error(fmt::format("init {}: holds parameter {}, which model {} does not have (another model?)", path,
                              name.substr(6), model_->name()));
}

bool Trainer::stopped_in(const std::map<std::string, std::string>& metadata) {
  if (metadata.count("stopped")) return true;
  // Written before "stopped": early stopping was the one rule that stopped a run, its state's last field.
  const auto e = metadata.find("early_stopping");
  if (e == metadata.end()) return false;
  EarlyStopping rule;
  rule.set_state(e->second);
  return rule.stopped();
}

}  // namespace matmem
