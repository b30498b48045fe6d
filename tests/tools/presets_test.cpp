// Every model–task preset of `matmem train` (the list `matmem train --help-config` prints, so a preset added
// later is covered too) trains from the command line: three steps at small sizes give a finite loss in
// metrics.csv, and every parameter of the 3-step run's checkpoint differs from the 1-step run's of the same
// seed (the runs are reproducible, so the first step is the same in both).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/models/registry.hpp"
#include "matmem/tests/models/data/small_data.hpp"
#include "matmem/tests/tools/command.hpp"
#include "matmem/tests/tools/run_files.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
struct Preset {
  std::string model, task, json;
};

// The presets as `matmem train --help-config` lists them: "  --model M --task T: {JSON}", the JSON wrapped
// at spaces onto lines indented by four.
std::vector<Preset> listed_presets(const std::string& help) {
  std::vector<Preset> out;
  const std::regex line(R"(^  --model (\S+) --task (\S+): (.*)$)");
  std::istringstream in(help);
  bool in_preset = false;
  for (std::string s; std::getline(in, s);) {
    if (std::smatch m; std::regex_match(s, m, line)) {
      out.push_back({m[1], m[2], m[3]});
      in_preset = true;
    } else if (in_preset && s.starts_with("    ")) {
      out.back().json += " " + s.substr(4);
    } else {
      in_preset = false;
    }
  }
  return out;
}

// The preset's model.layers (the default when it sets none) with each dimension at most 3: its layers' count
// and kind (1xn vectors or matrices) kept, their sizes small.
std::string small_layers(const std::string& json) {
  std::smatch m;
  std::string layers = "15x15,15x15";
  if (std::regex_search(json, m, std::regex(R"re("model\.layers":\s*"([^"]*)")re"))) layers = m[1];
  std::string out, number;
  for (const char ch : layers + ",") {
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      number += ch;
      continue;
    }
    if (!number.empty()) out += std::to_string(std::min(std::stoi(number), 3));
    number.clear();
    out += ch;
  }
  out.pop_back();  // the "," added above
  return out;
}

// Small sizes for every task and model (a key a run does not use is ignored): short sequences, few slots,
// layers and taps, a small graph and a few images of `data` (the preset's epochs give way to --steps).
std::string small_sets(const Preset& p, const std::string& data) {
  std::string s = "--set 'model.layers=\"" + small_layers(p.json) + "\"'";
  for (const char* kv :
       {"batch=4", "task.rows=2", "task.cols=3", "task.min_length=2", "task.max_length=4", "task.delay=2",
        "task.min_items=2", "task.max_items=3", "task.pairs=2", "ntm.slots=4", "ntm.slot_rows=2", "ntm.slot_cols=2",
        "dnc.slots=4", "dnc.slot_rows=2", "dnc.slot_cols=2", "task.min_subsequences=2", "task.max_subsequences=3",
        "task.keep=1", "task.min_keep_length=1", "task.max_keep_length=2", "task.min_discard_length=1",
        "task.max_discard_length=2",
        "ffn.depth=2", "gamma.taps=2", "cln.height=2", "cln.slots=4", "cln.heads=2", "task.graph.nodes=60",
        "task.graph.classes=2", "task.graph.words=20", "task.graph.topic_words=5", "task.graph.test=10",
        "task.graph.validation=10", "task.train=16", "task.validation=4", "task.test=4", "eval.batch=4",
        "task.max_repeats=2", "task.inputs=4", "task.outputs=3", "task.bits=20", "log_every=1", "checkpoint_every=0"})
    s += std::string(" --set ") + kv;
  return s + " --set task.data_dir=" + data;
}

// The loss column of every row of a run's metrics.csv (step,seconds,loss,...).
std::vector<double> logged_losses(const fs::path& run) {
  std::ifstream in(run / "metrics.csv");
  std::vector<double> out;
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    const std::size_t a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    if (c == std::string::npos) continue;
    out.push_back(std::stod(line.substr(b + 1, c - b - 1)));
  }
  return out;
}
}  // namespace

TEST_CASE("presets: --help-config lists every model–task preset", "[tools][presets]") {
  const fs::path dir = fresh_dir("presets_listed");
  const CommandResult help = run_matmem("train --help-config", dir);
  REQUIRE(help.status == 0);
  const std::vector<Preset> presets = listed_presets(help.output);
  INFO(help.output);
  // Every "--model" line read as a preset: none dropped by a change of its format.
  CHECK(int(presets.size()) == count_of(help.output, "--model "));
  CHECK(presets.size() >= 15);
  for (const Preset& p : presets) CHECK(p.json.front() == '{');
}

TEST_CASE("presets: each trains a few small steps from the command line, its loss finite and parameters changed",
          "[tools][presets]") {
  const fs::path dir = fresh_dir("presets_train");
  write_fashion_dir((dir / "data").string(), 24, 8);
  const std::vector<Preset> presets = listed_presets(run_matmem("train --help-config", dir).output);
  REQUIRE(!presets.empty());
  for (const Preset& p : presets) {
    const std::string name = p.model + "-" + p.task;
    const std::string args = "train --model " + p.model + " --task " + p.task + " " + small_sets(p, "data");
    INFO(name << ": matmem " << args);
    // One step, and three from the same seed: the same first step, then two more.
    const CommandResult one = run_matmem(args + " --steps 1 --out " + name + "-1", dir);
    INFO(one.output);
    const CommandResult three = run_matmem(args + " --steps 3 --out " + name + "-3", dir);
    INFO(three.output);
    CHECK(one.status == 0);
    CHECK(three.status == 0);
    if (one.status != 0 || three.status != 0) continue;  // on to the next preset
    const std::vector<double> losses = logged_losses(dir / (name + "-3"));
    CHECK(losses.size() == 3);
    for (double loss : losses) CHECK(std::isfinite(loss));
    const auto after_one = parameters_in(dir / (name + "-1") / "checkpoint.safetensors");
    const auto after_three = parameters_in(dir / (name + "-3") / "checkpoint.safetensors");
    CHECK(!after_one.empty());
    CHECK(after_one.size() == after_three.size());
    // Every parameter moved in steps 2 and 3 (each has a gradient at these sizes).
    std::vector<std::string> unchanged;
    for (const auto& [param, value] : after_one)
      if (const auto it = after_three.find(param); it != after_three.end() && same_tensor(value, it->second))
        unchanged.push_back(param);
    CAPTURE(unchanged);
    CHECK(unchanged.empty());
  }
}

TEST_CASE("presets: every MatDNC preset has no more parameters than the MatNTM preset of its task",
          "[tools][presets][dnc]") {
  const fs::path dir = fresh_dir("presets_dnc_parameters");
  const std::vector<Preset> presets = listed_presets(run_matmem("train --help-config", dir).output);
  // "training M on T (N parameters)", at the presets' own sizes.
  auto parameters = [&](const std::string& model, const std::string& task) {
    const CommandResult r = run_matmem("train --model " + model + " --task " + task +
                                           " --steps 1 --set checkpoint_every=0 --out " + model + "-" + task,
                                       dir);
    INFO(r.output);
    REQUIRE(r.status == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.output, m, std::regex(R"(\((\d+) parameters\))")));
    return std::stol(m[1]);
  };
  int compared = 0;
  for (const Preset& p : presets) {
    if (p.model != "matdnc") continue;
    INFO(p.task);
    const bool has_ntm = std::any_of(presets.begin(), presets.end(), [&](const Preset& q) {
      return q.model == "matntm" && q.task == p.task;
    });
    CHECK(has_ntm);
    if (!has_ntm) continue;
    CHECK(parameters("matdnc", p.task) <= parameters("matntm", p.task));
    ++compared;
  }
  CHECK(compared >= 5);
}

namespace {
// Display columns of a UTF-8 line.
std::size_t columns(const std::string& s) {
  return std::size_t(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}
}  // namespace

TEST_CASE("train --help-config: an index of its sections first, lines within the width, every bundled model named",
          "[tools][presets][help]") {
  const fs::path dir = fresh_dir("help_config");
  const CommandResult help = run_matmem("train --help-config", dir, 60, "", "COLUMNS=80");
  REQUIRE(help.status == 0);
  std::vector<std::string> lines;
  std::istringstream in(help.output);
  for (std::string s; std::getline(in, s);) lines.push_back(s);
  REQUIRE(lines.size() > 100);
  // Every line within 80 columns, but one holding a single word longer than that.
  for (const std::string& line : lines) {
    INFO(line);
    const std::size_t text = line.find_first_not_of(' ');
    CHECK((columns(line) <= 80 || (text != std::string::npos && line.find(' ', text) == std::string::npos)));
  }
  // The index: "sections (by line): keys K (task.* T, …); presets P", each line number the line it names.
  std::string index;
  for (const std::string& line : lines) {
    if (line.empty()) break;
    index += line + " ";
  }
  INFO(index);
  std::smatch m;
  REQUIRE(std::regex_search(index, m, std::regex(R"(^sections \(by line\): keys (\d+) \((.*)\); presets (\d+))")));
  const auto line_at = [&](const std::string& number) { return lines.at(std::stoul(number) - 1); };
  CHECK(line_at(m[1]).starts_with("model "));
  CHECK(line_at(m[3]).starts_with("Presets"));
  const std::string groups = m[2];
  CHECK_THAT(groups, Contains("task.* ") && Contains("ntm.* ") && Contains("dnc.* "));
  const std::regex group(R"(([a-z_]+)\.\* (\d+))");
  int found = 0;
  for (std::sregex_iterator g(groups.begin(), groups.end(), group), end; g != end; ++g, ++found)
    CHECK(line_at((*g)[2]).starts_with((*g)[1].str() + "."));
  CHECK(found >= 5);
  // The model key's list names every bundled model.
  std::string model_doc;
  for (std::size_t k = std::stoul(m[1]) - 1; k < lines.size() && (model_doc.empty() || lines[k].starts_with(" ")); ++k)
    model_doc += lines[k] + " ";
  for (const std::string& name : matmem::model_names()) {
    INFO(model_doc << "\nmodel " << name);
    CHECK(model_doc.find(" " + name) != std::string::npos);
  }
  // A key's declared range follows its meaning, as check_config() states it (wrapped: lines joined).
  const std::string joined = std::regex_replace(help.output, std::regex(R"(\n +)"), " ");
  CHECK_THAT(joined, Contains("[from 2 to 16777216]") && Contains("[\"stop\" or \"skip\"]") &&
                              Contains("[in (0, 2) (stability)]"));
}
