/// @file
/// Config: every hyperparameter of a training run, as flat dotted keys with typed defaults and one line
/// of documentation each (config_keys() lists them; `matmem train --help-config` prints them).
///
/// A run's config is resolved in layers: the built-in defaults, then the preset of the chosen model and
/// task (the paper's Table 1 settings: presets()), then a JSON file (--config FILE: an object of keys),
/// then --set key=value overrides. An unknown key, a value of the wrong type or an impossible value is
/// refused with a message naming the key and where it came from.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "matmem/runtime/dtype.hpp"

namespace matmem {

/// The values a key takes beyond its JSON type (its default's: boolean, integer, number or string), checked by
/// check_config(); an empty range takes every value of the type.
struct KeyRange {
  std::optional<double> min, max;    ///< a number's bounds, inclusive (exclusive with `above`, `below`)
  bool above = false;                ///< the value must be > min, not ≥ min
  bool below = false;                ///< the value must be < max, not ≤ max
  std::vector<std::string> choices;  ///< a string's values
  std::string note;                  ///< said after a refusal, e.g. "0: no evaluation"
};

/// The values `range` takes, as check_config() refuses others and `--help-config` shows them: "from 1 to 40",
/// "in (0, 1]", "≥ 0", "\"stop\" or \"skip\"", each followed by its note in parentheses; "" for any value.
std::string describe_range(const KeyRange& range);

/// A config key: its name, default, one line of documentation and the values it takes, declared once; the
/// help text, the check and the readers use it.
struct ConfigKey {
  std::string key;           ///< flat and dotted: "lr", "model.layers"
  std::string default_json;  ///< the default, as JSON text
  std::string doc;           ///< what it means, one line
  KeyRange range = {};       ///< the values it takes (check_config)
};
/// Every config key, as `matmem train --help-config` lists them.
const std::vector<ConfigKey>& config_keys();

/// Adds a config key (a plugin model's own, e.g. `mine.size`), settable by --set and --config and listed by
/// `matmem train --help-config`; a Config made afterwards holds its default. Throws Error when the key is
/// taken already, or its default is not a JSON boolean, number or string.
void register_config_key(ConfigKey key);

/// The hyperparameters of a training run: every key of config_keys() with its value (see the file).
class Config {
 public:
  Config();  ///< the defaults
  /// A copy.
  Config(const Config&);
  /// Copies every value.
  Config& operator=(const Config&);
  ~Config();

  /// Sets `key` from JSON text (or a bare string); `where` names the source in errors ("--set", a file).
  void set(const std::string& key, const std::string& value, const std::string& where);
  /// Sets `key` from a JSON value; `where` as above.
  void set_json(const std::string& key, const nlohmann::json& value, const std::string& where);
  /// set() from "key=value" (a --set argument); `where` as above, and an assignment without '=' or key is refused.
  void assign(const std::string& assignment, const std::string& where);
  void merge_file(const std::string& path);                 ///< a JSON object of keys
  /// Sets the keys of a JSON object given as text; `where` as above.
  void merge_json_text(const std::string& text, const std::string& where);
  void apply_preset(const std::string& model, const std::string& task);  ///< when one exists
  /// The layers above in order: the defaults, the preset of the model and task that `layers` (which sets the
  /// file's keys and the overrides) chooses, then `layers` again, so that its keys win over the preset's.
  static Config resolve(const std::function<void(Config&)>& layers);

  std::string str(const std::string& key) const;       ///< a string key's value
  double num(const std::string& key) const;            ///< a number key's value
  std::int64_t integer(const std::string& key) const;  ///< an integer key's value
  bool flag(const std::string& key) const;             ///< a boolean key's value
  /// "15x15,15x15" -> {{15,15},{15,15}}
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes(const std::string& key) const;

  std::string dump() const;  ///< pretty JSON of every key
  /// Every key's value, as a JSON object.
  const nlohmann::json& values() const;

 private:
  struct Impl;
  Impl* impl_;
};

/// Every key's value within its declared range (ConfigKey::range); else Error "config: KEY = VALUE must be …",
/// naming the range and its note.
void check_config(const Config& config);

/// The precision a run trains in (key dtype: float32 or float64).
DType training_dtype(const Config& config);

/// A bundled preset: (model, task) -> JSON object of keys, e.g. ("matntm", "copy").
struct Preset {
  std::string model, task, json;  ///< the model and task it is for, and its keys as a JSON object
};
/// The bundled presets.
const std::vector<Preset>& presets();

}  // namespace matmem
