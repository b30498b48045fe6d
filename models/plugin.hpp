/// @file
/// Plugins: a user's shared library that adds models, tasks, config keys and ops to every `matmem` command.
///
/// A plugin defines one registration function and exports it with MATMEM_PLUGIN:
///
///     void register_mine() {
///       matmem::register_model("mine", ...);   // models/registry.hpp
///       matmem::register_op(entry);             // ops/registry.hpp
///     }
///     MATMEM_PLUGIN(register_mine)
///
/// and is loaded with `matmem --plugin path/libmine.so <command> ...` (repeatable), or by listing it in
/// MATMEM_PLUGINS (paths separated by ':'). A run records the plugins it was started with and a resume
/// refuses, naming them, when one is not loaded. Built against another matmem version (major.minor) or for
/// another instruction set (runtime/isa.hpp) than the loaded libmatmem, a plugin is refused before its
/// registration function runs; a name it registers that is taken already is refused too.
#pragma once
#include <string>
#include <vector>

#include "matmem/runtime/isa.hpp"
#include "matmem/version.hpp"

/// The layout of matmem_plugin_info; changes when the struct does.
#define MATMEM_PLUGIN_ABI 1

extern "C" {
/// What a plugin exports as the symbol `matmem_plugin` (MATMEM_PLUGIN writes it).
struct matmem_plugin_info {
  int abi;                    ///< MATMEM_PLUGIN_ABI of the plugin's build
  const char* version;        ///< MATMEM_VERSION_STRING the plugin was compiled against
  const char* isa;            ///< MATMEM_COMPILED_ISA of the plugin's own sources
  void (*register_all)();     ///< registers the plugin's models, tasks, config keys and ops
};
}

/// Exports `fn` (a `void fn()`) as the plugin's registration function, with the version and instruction set
/// the plugin is compiled for. Write it once, at namespace scope, in one source file of the plugin.
#define MATMEM_PLUGIN(fn)                                                                                    \
  extern "C" __attribute__((visibility("default"))) const matmem_plugin_info matmem_plugin = {              \
      MATMEM_PLUGIN_ABI, MATMEM_VERSION_STRING, MATMEM_COMPILED_ISA, &fn};

namespace matmem {

/// A loaded plugin: its path (as given) and the names it registered.
struct PluginRecord {
  std::string path;                     ///< the path it was loaded from, as given
  std::string absolute;                 ///< that path made absolute, symbolic links resolved: how runs record it
  std::vector<std::string> models;      ///< models it registered
  std::vector<std::string> tasks;       ///< tasks it registered
  std::vector<std::string> ops;         ///< ops it registered
  std::vector<std::string> config_keys; ///< config keys it registered
};

/// Loads the plugin at `path` and runs its registration function. Throws Error, naming the path and the
/// reason, when the file is missing or not a shared library, exports no `matmem_plugin`, was built for
/// another plugin layout (MATMEM_PLUGIN_ABI), matmem version (major.minor) or instruction set, or registers a
/// name that is taken. Loading the same path twice loads it once. A refused plugin stays mapped (the names it
/// registered before the refusal stay registered): a program should stop on the error.
const PluginRecord& load_plugin(const std::string& path);

/// Loads every plugin listed in the environment variable MATMEM_PLUGINS (paths separated by ':', empty
/// entries ignored).
void load_plugins_from_environment();

/// The absolute paths of the loaded plugins in load order, separated by ':': what a run records (config key
/// `plugins`) and what MATMEM_PLUGINS takes. Empty when none is loaded.
std::string loaded_plugin_paths();

/// Refuses, throwing Error, a run's config (JSON text, as config.json and a checkpoint hold it) that records
/// in its key `plugins` a plugin that is not loaded, when its model, its task or one of its keys is unknown
/// without it; the message starts with `where`, names the plugin's path and how to load it. A config that
/// records no plugin, or needs none of those missing, or is not a JSON object, is left alone.
void check_plugins_loaded(const std::string& config_json, const std::string& where);

/// The plugins loaded so far, in load order (a copy: a later load does not change it).
std::vector<PluginRecord> loaded_plugins();

/// The loaded plugin that registered model, task or op `name`, or nullptr when none did (built in).
const PluginRecord* plugin_providing(const std::string& name);

}  // namespace matmem
