// `matmem train --config FILE`: a good file is applied, a bad one is refused naming the file and the key;
// every shipped config file and every bundled (model, task) preset trains; the MatNTM's impossible settings
// are refused naming the key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "matmem/models/training/config.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string& kSmall = kSmallMatNTM;

// The repository's root, from this file's path (tests/tools/config_test.cpp).
const fs::path kSourceDir = MATMEM_SOURCE_DIR;

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}
}  // namespace

TEST_CASE("config: a --config file's keys are applied, and --set and options override it", "[tools][config]") {
  const fs::path dir = fresh_dir("config_good");
  write(dir / "good.json", R"({"model": "matgru", "model.layers": "3x3", "task.rows": 2, "task.cols": 3,
                              "task.max_length": 3, "batch": 3, "lr": 0.0625, "seed": 5, "optimizer": "adam"})");
  const CommandResult r = run_matmem("train --config good.json --set batch=2 --steps 1 --out run", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const std::string config = read_file(dir / "run/config.json");
  INFO(config);
  CHECK_THAT(config, Contains("\"model\": \"matgru\"") && Contains("\"model.layers\": \"3x3\"") &&
                         Contains("\"lr\": 0.0625") && Contains("\"optimizer\": \"adam\"") && Contains("\"seed\": 5"));
  CHECK_THAT(config, Contains("\"batch\": 2"));  // --set after --config
}

TEST_CASE("config: a bad --config file is refused naming the file and the key", "[tools][config][errors]") {
  const fs::path dir = fresh_dir("config_bad");
  write(dir / "unknown.json", R"({"batch": 2, "ntm.slot": 5})");
  write(dir / "type.json", R"({"batch": "many"})");
  write(dir / "broken.json", R"({"batch": 2,)");
  write(dir / "array.json", R"([1, 2])");
  const std::pair<const char*, const char*> cases[] = {
      {"unknown.json", "unknown config key ntm.slot"},
      {"type.json", "batch must be an integer"},
      {"broken.json", "not valid JSON"},
      {"array.json", "must be a JSON object of config keys"},
      {"missing.json", "cannot be read"},
  };
  for (const auto& [file, message] : cases) {
    INFO(file);
    const CommandResult r = run_matmem("train --config " + std::string(file) + " --steps 1 --out run", dir);
    INFO(r.output);
    CHECK(r.refused());
    CHECK_THAT(r.output, Contains(std::string("config file ") + file) && Contains(message));
    CHECK_FALSE(fs::exists(dir / "run/checkpoint.safetensors"));
  }
}

TEST_CASE("config: every shipped config file loads and trains a step", "[tools][config]") {
  const fs::path dir = fresh_dir("config_shipped");
  std::set<std::string> names;
  for (const auto& f : fs::directory_iterator(kSourceDir / "models/configs")) {
    if (f.path().extension() != ".json") continue;
    const std::string name = f.path().stem().string();
    names.insert(name);
    INFO(f.path());
    const CommandResult r = run_matmem("train --config '" + f.path().string() + "' --steps 1 --out " + name, dir);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(fs::exists(dir / name / "checkpoint.safetensors"));
  }
  CHECK(names.count("vector_ntm_copy") == 1);
  CHECK(names.count("vector_ntm_recall") == 1);
}

TEST_CASE("config: Graves et al.'s configurations are exactly their files' keys over the defaults, no preset's key "
          "left", "[tools][config][graves]") {
  // The presets of the MatNTM's and MatLSTM's tasks clip the gradient's norm, decay the learning rate or skip
  // non-finite steps, which Graves et al. did not: a Graves file must set every key its preset sets.
  const matmem::Config defaults;
  int files = 0;
  for (const auto& f : fs::directory_iterator(kSourceDir / "models/configs")) {
    const std::string name = f.path().stem().string();
    if (name.rfind("graves_", 0) != 0) continue;
    ++files;
    INFO(name);
    std::ifstream in(f.path());
    const nlohmann::json file = nlohmann::json::parse(in);
    const matmem::Config resolved = matmem::Config::resolve([&](matmem::Config& c) { c.merge_file(f.path().string()); });
    for (const auto& [key, value] : resolved.values().items()) {
      INFO(key << " = " << value.dump());
      if (file.contains(key)) CHECK(value == file[key]);
      else CHECK(value == defaults.values()[key]);
    }
    // Graves' optimiser: centred RMSprop, ε = 1e-4 inside the square root, momentum 0.9, ℵ = 0.95; clipping ±10.
    // N-grams' and repeat copy's feed-forward NTMs learned at one sequence an update under the anchors' global
    // norm 50, N-grams' (both controllers and the matrix form) with fumin/ntm's ε (1e-3)
    // (models/results/graves-runs.md): their files have those. The matrix form of repeat copy with a MatLSTM
    // controller clips the gradient's norm to 10 instead of its elements (chosen on tuning seeds 1–5).
    const bool norm10 = name == "graves_repeat_copy_matntm_lstm";
    const bool ngrams = name == "graves_ngrams_ntm_ff" || name == "graves_ngrams_ntm_lstm" ||
                        name == "graves_ngrams_matntm_ff",
               bounded = ngrams || name == "graves_repeat_copy_ntm_ff";
    CHECK(resolved.flag("rmsprop.centered"));
    CHECK(resolved.flag("rmsprop.eps_inside"));
    CHECK(resolved.num("rmsprop.eps") == (ngrams ? 1e-3 : 1e-4));
    CHECK(resolved.num("clip.value") == (norm10 ? 0 : 10));
    CHECK(resolved.num("clip.norm") == (norm10 ? 10 : bounded ? 50 : 0));
  }
  // five tasks × (feed-forward NTM, LSTM-controller NTM, LSTM, matrix feed-forward NTM), and repeat copy's matrix
  // LSTM-controller NTM
  CHECK(files == 21);
}

TEST_CASE("config: every bundled (model, task) preset trains a step", "[tools][config]") {
  const fs::path dir = fresh_dir("config_presets");
  for (const char* model : {"matntm", "matrnn", "matlstm", "matgru"})
    for (const char* task : {"copy", "recall"}) {
      const std::string out = std::string(model) + "-" + task;
      INFO(out);
      const CommandResult r =
          run_matmem("train --model " + std::string(model) + " --task " + task + " --steps 1 --out " + out, dir);
      INFO(r.output);
      CHECK(r.status == 0);
      // the preset's sizes (Table 1): copy two 15x15 layers, recall three 20x20
      CHECK_THAT(read_file(dir / out / "config.json"),
                 Contains(std::string(task) == "copy" ? "\"15x15,15x15\"" : "\"20x20,20x20,20x20\""));
    }
}

TEST_CASE("config: the MatNTM's impossible settings are refused naming the key", "[tools][config][errors]") {
  const fs::path dir = fresh_dir("config_ntm");
  const std::pair<const char*, const char*> cases[] = {
      {"--set ntm.slots=0", "ntm.slots"},
      {"--set ntm.slots=1", "ntm.slots"},
      {"--set ntm.slot_rows=0", "ntm.slot_rows"},
      {"--set ntm.slot_cols=-2", "ntm.slot_cols"},
      {"--set ntm.read_heads=0", "ntm.read_heads"},
      {"--set ntm.write_heads=40", "ntm.write_heads"},
      {"--set ntm.controller=foo", "ntm.controller = \"foo\" must be \"rnn\", \"lstm\" or \"ff\""},
      {"--set ntm.controller=gru", "ntm.controller"},
      {"--set ntm.shift=3", "config (ntm.*): model ntm: shift 3 needs 2 shift + 1 ≤ slots"},
      {"--set 'model.layers=\"4x\"'", "model.layers"},
      {"--set 'model.layers=\"\"'", "model.layers"},
      {"--set model.layers=3", "model.layers"},
  };
  for (const auto& [set, key] : cases) {
    INFO(set);
    const CommandResult r = run_matmem("train " + kSmall + " " + set + " --steps 1 --out run", dir);
    INFO(r.output);
    CHECK(r.refused());
    CHECK_THAT(r.output, Contains(key));
    CHECK_FALSE(fs::exists(dir / "run/checkpoint.safetensors"));
  }
}
