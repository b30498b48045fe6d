// tools/bench_configs.json, the configurations `matmem bench train` and tools/bench_train_torch.py both time:
// each description pins every setting that changes what a step computes, and the model `matmem bench model`
// builds from it has the parameters the description implies, by a count written here from the sizes alone:
//   mat(P_1..P_k) -> R x C:  Σ_i (r_i R + c_i C) + R C  (U_i [r_i, R], V_i [c_i, C], B [R, C]);
//   a MatRNN layer one mat, a MatLSTM layer four (i, f, o, c), each of its inputs and h; a feed-forward layer
//   (ntm.controller ff) one mat of its inputs alone, no h; layer 1 of a MatNTM's controller takes the frame
//   and every read, later layers the layer below; each head five mats of h (key [mr, mc],
//   β, g, γ [1, 1], s [1, 2S+1]), a write head two more (erase, add [mr, mc]); the output mat(h, reads);
//   a learned first read [mr, mc] per read head. A MatDNC's (models/dnc/matdnc.hpp) controller is built as the
//   MatNTM's, under dnc/ctrl; each read head four mats of h (key [mr, mc], β and the free gate [1, 1], the modes
//   [1, 3]), the one write head six (key, erase, add [mr, mc], β, the allocation and write gates [1, 1]); with
//   dnc.masked_lookup every head a mask [mr, mc] more, with dnc.link_sharpness every read head two exponents
//   [1, 1], with dnc.interface_norm every one of those parts a gain and a bias of its shape; the output
//   mat(h, reads); no learned start. Frames r x c matrices with one delimiter row (copy) or two
//   (recall's item and query delimiters; priority sort's priority and delimiter rows); outputs r x c.
// Each graves-* configuration mirrors its models/configs/graves_*.json file in every key the file gives
// that changes what a step computes; each dnc-copy* one is the matdnc copy preset's step (models/training/
// config.cpp), dnc-copy-batch1 at batch 1 and dnc-copy-128 at 128 slots; ntm-priority-sort is the matntm
// priority_sort preset's step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "matmem/models/training/config.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using nlohmann::json;

namespace {

using Sizes = std::pair<std::int64_t, std::int64_t>;
using Shapes = std::map<std::string, Sizes>;

json bench_configs() {
  std::ifstream in(MATMEM_SOURCE_DIR "/tools/bench_configs.json");
  REQUIRE(in);
  return json::parse(in).at("configurations");
}

std::vector<Sizes> layer_sizes(const std::string& text) {  // "20x20,20x20" -> {{20,20},{20,20}}
  std::vector<Sizes> out;
  std::istringstream in(text);
  for (std::string layer; std::getline(in, layer, ',');) {
    const auto x = layer.find('x');
    out.push_back({std::stoll(layer.substr(0, x)), std::stoll(layer.substr(x + 1))});
  }
  return out;
}

// model.vector_u = one: a map of a row into a row has no U (held at one), in the description being counted.
bool unit_u = false;

// The parameters of mat(terms) -> rows x cols at `path`.
void mat(Shapes& p, const std::string& path, const std::vector<std::pair<std::string, Sizes>>& terms, Sizes out) {
  for (const auto& [term, in] : terms) {
    if (!(unit_u && in.first == 1 && out.first == 1)) p[path + "/" + term + "/U"] = {in.first, out.first};
    p[path + "/" + term + "/V"] = {in.second, out.second};
  }
  p[path + "/B"] = out;
}

// A stack of cells of `kind` (rnn, lstm, ff) at prefix/l<k>: layer 1 takes `inputs`, later ones the layer
// below; a recurrent cell also its h.
void cells(Shapes& p, const std::string& prefix, const std::string& kind, const std::vector<Sizes>& layers,
           std::vector<std::pair<std::string, Sizes>> inputs) {
  REQUIRE((kind == "rnn" || kind == "lstm" || kind == "ff"));
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const std::string path = prefix + "/l" + std::to_string(k + 1);
    auto terms = inputs;
    if (kind != "ff") terms.push_back({"h", layers[k]});
    if (kind != "lstm") mat(p, path, terms, layers[k]);
    for (const char* gate : {"i", "f", "o", "c"})
      if (kind == "lstm") mat(p, path + "/" + gate, terms, layers[k]);
    inputs = {{"x", layers[k]}};
  }
}

// The parameters a description's settings give, from the sizes alone.
Shapes expected_parameters(const json& s) {
  const std::string model = s.at("model"), task = s.at("task");
  unit_u = s.value("model.vector_u", "learned") == "one";
  const std::int64_t rows = s.at("task.rows"), cols = s.at("task.cols");
  REQUIRE((task == "copy" || task == "recall" || task == "priority_sort" || task == "repeat_copy" || task == "ngrams"));
  // A delimiter row (copy), or two (recall, priority sort, repeat copy's delimiter and count); repeat copy's
  // output an end-marker row more; N-grams one bit in and out.
  const bool ngrams = task == "ngrams";
  const Sizes in{ngrams ? 1 : rows + (task == "copy" ? 1 : 2), ngrams ? 1 : cols},
      out{ngrams ? 1 : rows + (task == "repeat_copy" ? 1 : 0), ngrams ? 1 : cols};
  const std::vector<Sizes> layers = layer_sizes(s.at("model.layers"));
  Shapes p;
  if (model == "matrnn") {
    cells(p, "matrnn", "rnn", layers, {{"x", in}});
    mat(p, "matrnn/out", {{"h", layers.back()}}, out);
    return p;
  }
  if (model == "matdnc") {
    const Sizes slot{s.at("dnc.slot_rows"), s.at("dnc.slot_cols")};
    const int reads = s.at("dnc.read_heads");
    const bool masks = s.at("dnc.masked_lookup"), sharpness = s.at("dnc.link_sharpness"),
               norm = s.at("dnc.interface_norm");
    std::vector<std::pair<std::string, Sizes>> inputs{{"x", in}}, outputs{{"h", layers.back()}};
    for (int k = 1; k <= reads; ++k) {
      inputs.push_back({"r" + std::to_string(k), slot});
      outputs.push_back({"r" + std::to_string(k), slot});
    }
    cells(p, "dnc/ctrl", s.at("dnc.controller").get<std::string>(), layers, inputs);
    const std::vector<std::pair<std::string, Sizes>> h{{"h", layers.back()}};
    auto part = [&](const std::string& path, Sizes size) {  // one part of the interface
      mat(p, path, h, size);
      if (norm) p[path + "/norm/gain"] = p[path + "/norm/bias"] = size;
    };
    for (int k = 1; k <= reads; ++k) {
      const std::string head = "dnc/read" + std::to_string(k);
      part(head + "/key", slot);
      part(head + "/beta", {1, 1});
      part(head + "/free", {1, 1});
      part(head + "/modes", {1, 3});
      if (masks) part(head + "/mask", slot);
      if (sharpness) part(head + "/sharp_forward", {1, 1}), part(head + "/sharp_backward", {1, 1});
    }
    for (const char* name : {"key", "erase", "add"}) part(std::string("dnc/write/") + name, slot);
    for (const char* name : {"beta", "allocation", "gate"}) part(std::string("dnc/write/") + name, {1, 1});
    if (masks) part("dnc/write/mask", slot);
    mat(p, "dnc/out", outputs, out);
    return p;
  }
  REQUIRE(model == "matntm");
  const Sizes slot{s.at("ntm.slot_rows"), s.at("ntm.slot_cols")};
  const int reads = s.at("ntm.read_heads"), writes = s.at("ntm.write_heads"), shift = s.at("ntm.shift");
  std::vector<std::pair<std::string, Sizes>> inputs{{"x", in}}, outputs{{"h", layers.back()}};
  for (int k = 1; k <= reads; ++k) {
    inputs.push_back({"r" + std::to_string(k), slot});
    outputs.push_back({"r" + std::to_string(k), slot});
    p["ntm/init/read" + std::to_string(k)] = slot;
  }
  // A learned memory start: N slots, as [N, r·c] (bench model prints it [N,r,c]).
  if (s.value("ntm.memory_init", "constant") == "learned")
    p["ntm/init/memory"] = {s.at("ntm.slots").get<std::int64_t>(), slot.first * slot.second};
  cells(p, "ntm/ctrl", s.at("ntm.controller").get<std::string>(), layers, inputs);
  for (int k = 0; k < reads + writes; ++k) {
    const std::string head = k < reads ? "ntm/read" + std::to_string(k + 1) : "ntm/write" + std::to_string(k - reads + 1);
    const std::vector<std::pair<std::string, Sizes>> h{{"h", layers.back()}};
    mat(p, head + "/key", h, slot);
    mat(p, head + "/beta", h, {1, 1});
    mat(p, head + "/gate", h, {1, 1});
    mat(p, head + "/shift", h, {1, 2 * shift + 1});
    mat(p, head + "/gamma", h, {1, 1});
    if (k >= reads) {
      mat(p, head + "/erase", h, slot);
      mat(p, head + "/add", h, slot);
    }
  }
  mat(p, "ntm/out", outputs, out);
  return p;
}

std::int64_t count(const Shapes& p) {
  std::int64_t n = 0;
  for (const auto& [name, size] : p) n += size.first * size.second;
  return n;
}

}  // namespace

TEST_CASE("bench configs: matmem builds each configuration's model with the parameters its description gives",
          "[tools][bench]") {
  const auto dir = fresh_dir("bench_configs");
  for (const json& c : bench_configs()) {
    const std::string name = c.at("name");
    INFO(name);
    const Shapes expected = expected_parameters(c.at("settings"));
    CHECK(count(expected) == c.at("parameters").get<std::int64_t>());
    const CommandResult r = run_matmem("bench model --config " + name, dir, 120);
    INFO(r.output);
    REQUIRE(r.status == 0);
    Shapes built;
    const std::regex line(R"(  parameter (\S+) \[(\d+),(\d+)(?:,(\d+))?\])");
    for (std::sregex_iterator m(r.output.begin(), r.output.end(), line), end; m != end; ++m)
      built[(*m)[1]] = (*m)[4].matched ? Sizes{std::stoll((*m)[2]), std::stoll((*m)[3]) * std::stoll((*m)[4])}
                                       : Sizes{std::stoll((*m)[2]), std::stoll((*m)[3])};
    CHECK(built == expected);
    std::smatch total;
    REQUIRE(std::regex_search(r.output, total, std::regex(R"(parameters: (\d+) values in (\d+) tensors)")));
    CHECK(std::stoll(total[1]) == count(expected));
    CHECK(std::stoull(total[2]) == expected.size());
  }
}

TEST_CASE("bench configs: every description pins the model, task, batch, optimiser and clipping", "[tools][bench]") {
  // The keys a configuration must give so that neither a preset nor a changed default moves it.
  const std::vector<std::string> all = {"model", "task", "seed", "batch", "task.rows", "task.cols",
                                        "curriculum.threshold", "model.layers", "optimizer", "lr", "lr.schedule",
                                        "rmsprop.alpha", "rmsprop.momentum", "rmsprop.eps", "rmsprop.centered",
                                        "rmsprop.eps_inside", "weight_decay", "clip.value", "clip.norm"};
  const std::vector<std::string> ntm = {"ntm.controller", "ntm.forget_bias", "ntm.slots", "ntm.slot_rows",
                                        "ntm.slot_cols", "ntm.read_heads", "ntm.write_heads", "ntm.shift",
                                        "ntm.initial_weighting", "ntm.memory_init"};
  // The MatDNC's keys, its options among them (each changes the step when on), and the controller's clip (DeepMind's
  // DNC clips its controller); dnc.mask_floor where dnc.masked_lookup is on.
  const std::vector<std::string> dnc = {"dnc.controller", "dnc.slots", "dnc.slot_rows", "dnc.slot_cols",
                                        "dnc.read_heads", "dnc.usage_gradient", "dnc.free_gates", "dnc.cosine_eps",
                                        "dnc.masked_lookup", "dnc.link_sharpness", "dnc.deallocation",
                                        "dnc.interface_norm", "dnc.read_fallback", "controller.clip",
                                        "controller.clip_logits"};
  const std::map<std::string, std::vector<std::string>> task_keys = {
      {"copy", {"task.min_length", "task.max_length"}},
      {"recall", {"task.min_items", "task.max_items", "task.item_matrices"}},
      {"priority_sort", {"task.inputs", "task.outputs"}},
      {"repeat_copy", {"task.min_length", "task.max_length", "task.min_repeats", "task.max_repeats"}},
      {"ngrams", {"task.order", "task.bits"}}};
  std::vector<std::string> names;
  for (const json& c : bench_configs()) {
    const json& s = c.at("settings");
    names.push_back(c.at("name"));
    INFO(names.back());
    std::vector<std::string> required = all;
    if (s.at("model") == "matntm") required.insert(required.end(), ntm.begin(), ntm.end());
    if (s.at("model") == "matdnc") {
      required.insert(required.end(), dnc.begin(), dnc.end());
      if (s.value("dnc.masked_lookup", false)) required.push_back("dnc.mask_floor");
    }
    const auto& t = task_keys.at(s.at("task"));
    required.insert(required.end(), t.begin(), t.end());
    for (const std::string& key : required) {
      INFO(key);
      CHECK(s.contains(key));
    }
  }
}

TEST_CASE("bench configs: ntm-recall is Table 1's MatRNN step, ntm-lstm-recall the recall preset's MatLSTM step",
          "[tools][bench]") {
  std::map<std::string, json> by_name;
  for (const json& c : bench_configs()) by_name[c.at("name")] = c.at("settings");
  REQUIRE(by_name.count("ntm-recall"));
  REQUIRE(by_name.count("ntm-lstm-recall"));
  const json &rnn = by_name["ntm-recall"], &lstm = by_name["ntm-lstm-recall"];
  CHECK(rnn.at("ntm.controller") == "rnn");
  CHECK(rnn.at("model.layers") == "20x20,20x20,20x20");
  CHECK(rnn.at("lr") == 8e-5);
  CHECK(lstm.at("ntm.controller") == "lstm");
  CHECK(lstm.at("lr") == 3e-4);
  CHECK(lstm.at("clip.norm") == 10.0);
}

TEST_CASE("bench configs: each graves-* configuration is its models/configs file's step", "[tools][bench]") {
  // The keys of a models/configs file that change only how long a run is, what it logs and evaluates and when it
  // stops, not a step; lr.solved_below (with its lr.solved_window) acts only once a run's cost has fallen below it.
  const std::vector<std::string> not_a_step = {"steps",           "log_every",        "checkpoint_every",
                                               "nonfinite",       "nonfinite.max_skips", "lr.solved_below",
                                               "lr.solved_window", "eval.batches"};
  int mirrored = 0;
  for (const json& c : bench_configs()) {
    const std::string name = c.at("name");
    if (name.rfind("graves-", 0) != 0) continue;
    INFO(name);
    std::string file = name;
    std::replace(file.begin(), file.end(), '-', '_');
    std::ifstream in(MATMEM_SOURCE_DIR "/models/configs/" + file + ".json");
    REQUIRE(in);
    const json run = json::parse(in), &s = c.at("settings");
    for (const auto& [key, value] : run.items()) {
      INFO(key);
      if (std::find(not_a_step.begin(), not_a_step.end(), key) != not_a_step.end()) continue;
      REQUIRE(s.contains(key));
      CHECK(s.at(key) == value);
    }
    ++mirrored;
  }
  CHECK(mirrored == 8);
}

// Each configuration named here is a preset's step (`matmem train --model M --task T`: the defaults, then the
// preset), in every key it gives, but for the one key a variant changes.
TEST_CASE("bench configs: dnc-copy is the matdnc copy preset's step, dnc-copy-batch1 at batch 1, dnc-copy-128 at "
          "128 slots, and ntm-priority-sort the matntm priority_sort preset's", "[tools][bench]") {
  struct Variant {
    std::string model, task, key;  // key: the one setting that differs from the preset ("" none)
    json value;
  };
  const std::map<std::string, Variant> variants = {{"dnc-copy", {"matdnc", "copy", "", json()}},
                                                   {"dnc-copy-batch1", {"matdnc", "copy", "batch", 1}},
                                                   {"dnc-copy-128", {"matdnc", "copy", "dnc.slots", 128}},
                                                   {"ntm-priority-sort", {"matntm", "priority_sort", "", json()}}};
  int found = 0;
  for (const json& c : bench_configs()) {
    const std::string name = c.at("name");
    const auto v = variants.find(name);
    if (v == variants.end()) continue;
    INFO(name);
    matmem::Config preset;
    preset.set_json("model", v->second.model, "test");
    preset.set_json("task", v->second.task, "test");
    preset.apply_preset(v->second.model, v->second.task);
    const json& s = c.at("settings");
    for (const auto& [key, value] : s.items()) {
      INFO(key);
      REQUIRE(preset.values().contains(key));
      CHECK(value == (key == v->second.key ? v->second.value : preset.values().at(key)));
    }
    if (!v->second.key.empty()) CHECK(s.contains(v->second.key));
    ++found;
  }
  CHECK(found == 4);
}
