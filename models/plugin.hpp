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
  std::vector<std::string> models;      ///< models it registered
  std::vector<std::string> tasks;       ///< tasks it registered
  std::vector<std::string> ops;         ///< ops it registered
  std::vector<std::string> config_keys; ///< config keys it registered
};

/// Loads the plugin at `path` and runs its registration function. Throws Error, naming the path and the
/// reason, when the file is missing or not a shared library, exports no `matmem_plugin`, was built for
/// another matmem version or instruction set, or registers a name that is taken. Loading the same path
/// twice loads it once.
const PluginRecord& load_plugin(const std::string& path);

/// Loads every plugin listed in the environment variable MATMEM_PLUGINS (paths separated by ':').
void load_plugins_from_environment();

/// The plugins loaded so far, in load order.
const std::vector<PluginRecord>& loaded_plugins();

/// The loaded plugin that registered model, task or op `name`, or nullptr when none did (built in).
const PluginRecord* plugin_providing(const std::string& name);

}  // namespace matmem
