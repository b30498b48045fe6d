#include "matmem/models/plugin.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {
namespace {
// A deque: load_plugin() hands records out by reference, which a later load must not move.
std::deque<PluginRecord>& records() {
  static std::deque<PluginRecord> all;
  return all;
}
std::mutex& load_mutex() {
  static std::mutex m;
  return m;
}

// "MAJOR.MINOR" of "MAJOR.MINOR.PATCH".
std::string major_minor(const std::string& version) {
  const auto first = version.find('.');
  if (first == std::string::npos) return version;
  return version.substr(0, version.find('.', first + 1));
}

// Every name of one kind registered so far, to tell which ones a registration function added.
struct Names {
  std::vector<std::string> models, tasks, ops, config_keys;
  static Names now() {
    Names n;
    n.models = model_names();
    n.tasks = task_names();
    for (const OpEntry& e : op_registry()) n.ops.push_back(e.name);
    for (const ConfigKey& k : matmem::config_keys()) n.config_keys.push_back(k.key);
    return n;
  }
};
// The names of `after` not in `before`, in the order of `after`.
std::vector<std::string> added(const std::vector<std::string>& before, const std::vector<std::string>& after) {
  std::vector<std::string> out;
  for (const std::string& n : after)
    if (std::find(before.begin(), before.end(), n) == before.end()) out.push_back(n);
  return out;
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}
}  // namespace

const PluginRecord& load_plugin(const std::string& path) {
  namespace fs = std::filesystem;
  std::lock_guard<std::mutex> lock(load_mutex());
  std::error_code ec;
  if (path.empty()) throw Error("plugin: the path is empty");
  if (!fs::exists(path, ec)) throw Error(fmt::format("plugin {}: no such file", path));
  if (fs::is_directory(path, ec)) throw Error(fmt::format("plugin {}: is a directory, not a shared library", path));
  const std::string absolute = fs::canonical(path, ec).string();
  if (ec) throw Error(fmt::format("plugin {}: {}", path, ec.message()));
  for (const PluginRecord& r : records())
    if (r.absolute == absolute) return r;
  // Names registered from here on, by the plugin's static constructors as by its registration function, are
  // the plugin's.
  const Names before = Names::now();
  // A refused plugin is never closed: code of its own (a registry entry made by a static constructor) may be
  // referenced already, and unmapping it would leave that dangling.
  ::dlerror();
  void* handle = ::dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    throw Error(fmt::format("plugin {}: cannot be loaded: {}", path, why ? why : "dlopen failed"));
  }
  const auto* info = static_cast<const matmem_plugin_info*>(::dlsym(handle, "matmem_plugin"));
  if (!info)
    throw Error(fmt::format("plugin {}: exports no matmem_plugin: define its registration function with "
                            "MATMEM_PLUGIN(fn)",
                            path));
  if (info->abi != MATMEM_PLUGIN_ABI)
    throw Error(fmt::format("plugin {}: built for plugin layout {} (MATMEM_PLUGIN_ABI), this matmem loads layout {}: "
                            "rebuild it against matmem {}",
                            path, info->abi, MATMEM_PLUGIN_ABI, version()));
  const std::string plugin_version = info->version ? info->version : "(none)";
  if (major_minor(plugin_version) != major_minor(version()))
    throw Error(fmt::format("plugin {}: built against matmem {}, this is matmem {} (major.minor must match): "
                            "rebuild it against matmem {}",
                            path, plugin_version, version(), version()));
  const std::string plugin_isa = info->isa ? info->isa : "(none)";
  if (plugin_isa != library_isa())
    throw Error(fmt::format("plugin {}: built for instruction set \"{}\", libmatmem for \"{}\": rebuild it with "
                            "libmatmem's compile options (link matmem::matmem, which passes them on)",
                            path, plugin_isa, library_isa()));
  if (!info->register_all) throw Error(fmt::format("plugin {}: its matmem_plugin names no registration function", path));
  try {
    info->register_all();
  } catch (const std::exception& e) {
    throw Error(fmt::format("plugin {}: {}", path, e.what()));
  }
  const Names after = Names::now();
  PluginRecord r;
  r.path = path;
  r.absolute = absolute;
  r.models = added(before.models, after.models);
  r.tasks = added(before.tasks, after.tasks);
  r.ops = added(before.ops, after.ops);
  r.config_keys = added(before.config_keys, after.config_keys);
  records().push_back(std::move(r));
  return records().back();
}

void load_plugins_from_environment() {
  const char* list = std::getenv("MATMEM_PLUGINS");
  if (!list) return;
  for (const std::string& path : split_paths(list)) {
    try {
      load_plugin(path);
    } catch (const Error& e) {
      throw Error(fmt::format("MATMEM_PLUGINS: {}", e.what()));
    }
  }
}

std::vector<PluginRecord> loaded_plugins() { return {records().begin(), records().end()}; }

const PluginRecord* plugin_providing(const std::string& name) {
  for (const PluginRecord& r : records())
    for (const auto* names : {&r.models, &r.tasks, &r.ops})
      if (std::find(names->begin(), names->end(), name) != names->end()) return &r;
  return nullptr;
}

std::string loaded_plugin_paths() {
  std::string out;
  for (const PluginRecord& r : records()) out += (out.empty() ? "" : ":") + r.absolute;
  return out;
}

void check_plugins_loaded(const std::string& config_json, const std::string& where) {
  namespace fs = std::filesystem;
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (!j.is_object() || !j.contains("plugins") || !j["plugins"].is_string()) return;
  std::vector<std::string> missing;
  for (const std::string& path : split_paths(j["plugins"].get<std::string>())) {
    std::error_code ec;
    const fs::path now = fs::canonical(path, ec);  // the file as it resolves today, when it is there
    const bool loaded = std::any_of(records().begin(), records().end(), [&](const PluginRecord& r) {
      return r.absolute == path || (!ec && r.absolute == now.string());
    });
    if (!loaded) missing.push_back(path);
  }
  if (missing.empty()) return;
  // What the run needs that nothing loaded provides.
  std::vector<std::string> unknown;
  const std::vector<std::string> models = model_names(), tasks = task_names();
  if (j.contains("model") && j["model"].is_string()) {
    const std::string m = canonical_model_name(j["model"].get<std::string>());
    if (std::find(models.begin(), models.end(), m) == models.end()) unknown.push_back("model " + m);
  }
  if (j.contains("task") && j["task"].is_string()) {
    const std::string t = j["task"].get<std::string>();
    if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) unknown.push_back("task " + t);
  }
  const std::vector<ConfigKey>& keys = config_keys();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(keys.begin(), keys.end(), [&](const ConfigKey& k) { return k.key == it.key(); }) &&
        it.key() != "task.graph.patience")  // a key of earlier versions, read as eval.patience
      unknown.push_back("config key " + it.key());
  if (unknown.empty()) return;
  std::string paths, needs;
  for (const std::string& p : missing) paths += (paths.empty() ? "" : ":") + p;
  for (const std::string& u : unknown) needs += (needs.empty() ? "" : ", ") + u;
  throw Error(fmt::format("{}: the run was trained with plugin {}, which is not loaded ({} unknown without it): "
                          "load it with `matmem --plugin {} …` or MATMEM_PLUGINS={}",
                          where, paths, needs, missing.front(), paths));
}

}  // namespace matmem
