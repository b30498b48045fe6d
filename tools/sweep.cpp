#include "matmem/tools/sweep.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/files.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tools/plot/runs.hpp"

namespace matmem::tools::sweep {
namespace fs = std::filesystem;
using ordered = nlohmann::ordered_json;

namespace {

// A value as it appears in a run's name: strings without their quotes.
std::string label(const ordered& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Keys of a JSON object, each checked against `allowed`.
void check_keys(const ordered& obj, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [k, v] : obj.items())
    if (!allowed.count(k)) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw Error(fmt::format("{}: unknown key '{}' (expected {})", where, k, list));
    }
}

const ordered& object_at(const ordered& obj, const char* key, const std::string& where) {
  static const ordered empty = ordered::object();
  if (!obj.contains(key)) return empty;
  const ordered& v = obj.at(key);
  if (!v.is_object()) throw Error(fmt::format("{}: \"{}\" must be an object of config keys", where, key));
  return v;
}

std::vector<std::int64_t> seeds_of(const ordered& v, const std::string& where) {
  if (!v.is_array() || v.empty()) throw Error(fmt::format("{}: \"seeds\" must be a non-empty list of seeds", where));
  std::vector<std::int64_t> seeds;
  for (const ordered& s : v) {
    if (!s.is_number_integer() || s.get<std::int64_t>() < 0)
      throw Error(fmt::format("{}: seed {} is not a whole number ≥ 0", where, s.dump()));
    for (std::int64_t t : seeds)
      if (t == s.get<std::int64_t>()) throw Error(fmt::format("{}: seed {} is listed twice", where, t));
    seeds.push_back(s.get<std::int64_t>());
  }
  return seeds;
}

// A name a directory can carry, at any depth below OUT.
std::string checked_name(const std::string& name, const std::string& where) {
  if (name.empty() || name.find("..") != std::string::npos || name.front() == '/' || name.find('\0') != std::string::npos)
    throw Error(fmt::format("{}: run name '{}' cannot name a directory below \"out\"", where, name));
  return name;
}

// A "config" entry: a JSON file of config keys, as `matmem train --config` takes.
std::string config_file(const ordered& v, const std::string& where) {
  if (!v.is_string() || v.get<std::string>().empty())
    throw Error(fmt::format("{}: \"config\" must name a JSON file of config keys", where));
  return v.get<std::string>();
}

// The name of a run's cost ("bits/seq", "errors/seq", "nmse"), from its task in config.json.
// A config this build cannot read (a run of another version, say) names it "cost".
std::string cost_name_of(const fs::path& dir) {
  std::ifstream in(dir / "config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    Config c;
    c.merge_json_text(text, (dir / "config.json").string());
    return cost_name(make_task(c)->target_kind());
  } catch (const std::exception&) {
    return "cost";
  }
}

// The last line of a file, for a failed run's message.
std::string last_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// A JSON file (a plan, a run's config.json); refused naming `where` when it cannot be read or is not JSON.
ordered read_json(const fs::path& file, const std::string& where) {
  std::ifstream in(file);
  if (!in) throw Error(fmt::format("{}: cannot read it", where));
  try {
    return ordered::parse(in);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", where, e.what()));
  }
}

}  // namespace

Plan read_plan(const fs::path& file) {
  const std::string where = fmt::format("plan {}", file.string());
  const ordered j = read_json(file, where);
  if (!j.is_object()) throw Error(fmt::format("{}: must be a JSON object (see `matmem sweep --help`)", where));
  check_keys(j, {"out", "config", "steps", "seeds", "set", "grid", "runs"}, where);
  Plan plan;
  plan.file = file;
  if (j.contains("out") && (!j["out"].is_string() || j["out"].get<std::string>().empty()))
    throw Error(fmt::format("{}: \"out\" must be a directory name", where));
  plan.out = j.contains("out") ? fs::path(j["out"].get<std::string>()) : fs::path("runs") / ("sweep-" + file.stem().string());
  std::int64_t steps = 0;
  if (j.contains("steps")) {
    if (!j["steps"].is_number_integer() || j["steps"].get<std::int64_t>() < 1)
      throw Error(fmt::format("{}: \"steps\" must be a whole number ≥ 1", where));
    steps = j["steps"].get<std::int64_t>();
  }
  const std::vector<std::int64_t> seeds = j.contains("seeds") ? seeds_of(j["seeds"], where) : std::vector<std::int64_t>{1};
  const ordered& common = object_at(j, "set", where);
  const std::string common_config = j.contains("config") ? config_file(j["config"], where) : "";
  const ordered& grid = object_at(j, "grid", where);
  for (const auto& [k, v] : grid.items())
    if (!v.is_array() || v.empty())
      throw Error(fmt::format("{}: grid \"{}\" must be a non-empty list of values", where, k));
  // Every combination of the grid's values, the first key varying slowest.
  std::vector<std::vector<std::pair<std::string, ordered>>> combos{{}};
  for (const auto& [k, values] : grid.items()) {
    std::vector<std::vector<std::pair<std::string, ordered>>> next;
    for (const auto& c : combos)
      for (const ordered& v : values) {
        next.push_back(c);
        next.back().emplace_back(k, v);
      }
    combos = std::move(next);
  }
  ordered runs = ordered::array({ordered::object()});
  if (j.contains("runs")) {
    if (!j["runs"].is_array() || j["runs"].empty())
      throw Error(fmt::format("{}: \"runs\" must be a non-empty list of runs", where));
    runs = j["runs"];
  }
  std::set<std::string> names;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const ordered& run = runs[r];
    const std::string run_where = fmt::format("{}, run {}", where, r + 1);
    if (!run.is_object()) throw Error(fmt::format("{}: must be an object with \"name\" and \"set\"", run_where));
    check_keys(run, {"name", "config", "set"}, run_where);
    if (j.contains("runs") && (!run.contains("name") || !run["name"].is_string()))
      throw Error(fmt::format("{}: needs a \"name\"", run_where));
    const std::string base = run.contains("name") ? checked_name(run["name"].get<std::string>(), run_where) : "";
    const ordered& own = object_at(run, "set", run_where);
    const std::string config = run.contains("config") ? config_file(run["config"], run_where) : common_config;
    for (const auto& combo : combos) {
      std::string name = base;
      std::string grid_label;
      for (const auto& [k, v] : combo) grid_label += (grid_label.empty() ? "" : ",") + k + "=" + label(v);
      for (char& ch : grid_label)
        if (ch == '/') ch = '_';
      if (!grid_label.empty()) name += (name.empty() ? "" : "/") + grid_label;
      if (name.empty()) name = "run";
      if (!names.insert(name).second) throw Error(fmt::format("{}: two runs are named {}", where, name));
      std::vector<std::pair<std::string, std::string>> sets;
      for (const ordered* layer : {&common, &own})
        for (const auto& [k, v] : layer->items()) sets.emplace_back(k, v.dump());
      for (const auto& [k, v] : combo) sets.emplace_back(k, v.dump());
      for (std::int64_t seed : seeds) {
        const std::string this_where = fmt::format("{} ({}, seed {})", where, name, seed);
        // "{seed}" in a value is the run's seed: a run started from the same seed's run of another plan
        // ("init": "runs/experiments/STAGE1/run/seed{seed}"). Only a JSON string can hold it.
        std::vector<std::pair<std::string, std::string>> seed_sets = sets;
        for (auto& [k, v] : seed_sets)
          for (std::size_t at = v.find("{seed}"); at != std::string::npos; at = v.find("{seed}", at))
            v.replace(at, 6, std::to_string(seed));
        const Config c = Config::resolve([&](Config& cfg) {
          if (!config.empty()) cfg.merge_file(config);
          for (const auto& [k, v] : seed_sets) cfg.set(k, v, this_where);
          if (steps > 0) {  // as `matmem train --steps`: the plan's steps replace a data set's epochs
            cfg.set_json("steps", steps, this_where);
            cfg.set_json("epochs", 0, this_where);
          }
          cfg.set_json("seed", seed, this_where);
        });
        // A data set's epochs: the steps they take (the budget `matmem train` derives from them too). Only then
        // is the task made (a data set is read, a graph generated) to count its steps.
        const std::int64_t budget = c.integer("epochs") > 0 ? step_budget(c, *make_task(c)) : c.integer("steps");
        PlannedRun p{name, seed, budget, config, seed_sets, plan.out / name / fmt::format("seed{}", seed), c.dump()};
        plan.runs.push_back(std::move(p));
      }
    }
  }
  return plan;
}

RunState run_state(const PlannedRun& run) {
  const fs::path ckpt = run.dir / "checkpoint.safetensors";
  if (fs::exists(ckpt)) {
    const TensorFile f = read_safetensors(ckpt.string());
    const auto it = f.metadata.find("step");
    if (it == f.metadata.end()) throw Error(fmt::format("{}: no step in its metadata", ckpt.string()));
    std::int64_t step = -1;
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), step);
    if (ec != std::errc() || end != text.data() + text.size() || step < 0)
      throw Error(fmt::format("{}: step \"{}\" is not a whole number ≥ 0", ckpt.string(), text));
    if (step >= run.steps) return {State::complete, step};
    if (Trainer::stopped_in(f.metadata)) return {State::stopped, step};
    return {State::interrupted, step};
  }
  for (const char* f : {"metrics.csv", "config.json"})
    if (fs::exists(run.dir / f)) return {State::begun, 0};
  return {State::fresh, 0};
}

std::vector<std::string> changed_settings(const PlannedRun& run) {
  const fs::path file = run.dir / "config.json";
  if (!fs::exists(run.dir / "checkpoint.safetensors") || !fs::exists(file)) return {};
  const ordered trained = read_json(file, file.string());
  const ordered planned = ordered::parse(run.resolved);  // Config::dump()'s own output
  // Under a cosine schedule the budget is the schedule's length T: a new one changes the rate of the steps left.
  const bool budget_sets_rate = planned.value("lr.schedule", "") == "cosine";
  std::vector<std::string> changed;
  for (const auto& [key, value] : planned.items()) {
    if (key == "epochs" || key == "plugins" || !trained.contains(key)) continue;
    if (key == "steps" && !budget_sets_rate) continue;
    if (trained[key] != value)
      changed.push_back(fmt::format("{} = {} (the plan: {})", key, trained[key].dump(), value.dump()));
  }
  return changed;
}

std::vector<std::string> train_arguments(const PlannedRun& run, const RunState& state) {
  std::vector<std::string> a{"train"};
  if (state.state == State::interrupted) {
    a.insert(a.end(), {"--resume", run.dir.string(), "--steps", std::to_string(run.steps)});
    return a;
  }
  if (!run.config.empty()) a.insert(a.end(), {"--config", run.config});
  for (const auto& [k, v] : run.sets) a.insert(a.end(), {"--set", k + "=" + v});
  a.insert(a.end(), {"--seed", std::to_string(run.seed), "--steps", std::to_string(run.steps), "--out",
                     run.dir.string()});
  if (state.state == State::begun) a.push_back("--overwrite");  // no checkpoint yet: nothing to keep
  return a;
}

RunResult run_result(const PlannedRun& run) {
  RunResult r;
  r.name = run.name;
  r.seed = run.seed;
  r.budget = run.steps;
  r.loss = r.bits = std::numeric_limits<double>::quiet_NaN();
  RunState state;
  try {
    state = run_state(run);
  } catch (const std::exception& e) {
    r.status = fmt::format("failed: {}", e.what());
    return r;
  }
  if (fs::exists(run.dir / "metrics.csv") && fs::exists(run.dir / "config.json")) {
    const plot::Run m = plot::read_run(run.dir);
    // Rows past the checkpoint (a process killed between them) are trained again when the run resumes.
    std::size_t n = m.step.size();
    while (n > 0 && !finished(state.state) && m.step[n - 1] > double(state.steps_done)) --n;
    // Means are over the last 16,000 sequences, as the results pages count: 1,000 steps of 16, 16,000 steps at
    // one sequence an update (1,000 steps where config.json names no batch).
    const std::int64_t window = m.config.count("batch") ? std::max<std::int64_t>(1, 16000 / m.batch()) : 1000;
    r.window_steps = window;
    // The mean of `v` over the rows of the `window` steps up to row i; NaN rows (only skipped steps) left out.
    auto last_window = [&](const std::vector<double>& v, std::size_t i) {
      double sum = 0;
      int count = 0;
      for (std::size_t k = i + 1; k-- > 0 && m.step[k] > m.step[i] - double(window);)
        if (!std::isnan(v[k])) sum += v[k], ++count;
      return count > 0 ? sum / count : std::numeric_limits<double>::quiet_NaN();
    };
    if (n > 0) r.loss = last_window(m.loss, n - 1), r.bits = last_window(m.bits, n - 1);
    r.cost_name = cost_name_of(run.dir);
    // The curve: the mean at every row that ends a full window (stability.md's counting; a run shorter than one
    // window has only its last row's mean). Collapses are counted for a cost of bits only.
    const bool bits = r.cost_name == "bits/seq";
    r.collapses = bits ? 0 : -1;
    bool above = false;
    for (std::size_t i = 0; i < n; ++i) {
      // Each process logs seconds from its own start: a value below the one before begins a new process.
      if (i + 1 == n || m.seconds[i + 1] < m.seconds[i]) r.seconds += m.seconds[i];
      const bool full = m.step[i] >= double(window);
      if (!full && i + 1 < n) continue;  // steps increase: a last row short of a window means there is no full one
      const double mean = last_window(m.bits, i);
      if (std::isnan(mean)) continue;
      if (r.best_step < 0 || mean < r.best) r.best = mean, r.best_step = std::int64_t(m.step[i]);
      if (!bits || !full) continue;
      if (r.first_below_1bit < 0 && mean < 1.0) r.first_below_1bit = std::int64_t(m.step[i]);
      if (r.first_below_1bit >= 0) {
        if (mean > 5.0 && !above) ++r.collapses;
        above = mean > 5.0;
      }
    }
    if (r.best_step < 0) r.collapses = -1;  // no mean yet: nothing counted
  }
  r.steps_done = state.steps_done;
  switch (state.state) {
    case State::complete: r.status = "complete"; break;
    case State::stopped: r.status = fmt::format("stopped early at step {}", state.steps_done); break;
    case State::interrupted: r.status = fmt::format("interrupted at step {}", state.steps_done); break;
    case State::begun:
    case State::fresh: r.status = "not started"; break;
  }
  const fs::path log = run.dir / "train.log";
  if (!finished(state.state) && fs::exists(log)) {
    const std::string last = last_line(log);
    if (last.rfind("matmem: ", 0) == 0) r.status = fmt::format("failed: {}", last.substr(8));
  }
  return r;
}

namespace {
std::string number(double v, const char* spec) { return std::isnan(v) ? "" : fmt::format(fmt::runtime(spec), v); }
}  // namespace

std::string markdown_table(const std::vector<RunResult>& results) {
  std::string s =
      "| run | seed | steps | loss | cost | first step < 1 bit | collapses | best (step) | seconds | status |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  const auto cost = [](double v) { return number(v, v < 1 ? "{:.4f}" : "{:.2f}"); };
  for (const RunResult& r : results)
    s += fmt::format("| {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} |\n", r.name, r.seed, r.steps_done,
                     r.budget, number(r.loss, "{:.4f}"),
                     std::isnan(r.bits) ? "" : fmt::format("{} {}", cost(r.bits), r.cost_name),
                     r.first_below_1bit >= 0 ? std::to_string(r.first_below_1bit) : "–",
                     r.collapses >= 0 ? std::to_string(r.collapses) : "–",
                     r.best_step >= 0 ? fmt::format("{} ({})", cost(r.best), r.best_step) : "",
                     number(r.seconds, "{:.1f}"), r.status);
  return s +
         "\nLoss and cost: means over the last 16,000 sequences logged (1,000 steps of 16, 16,000 of 1); the first "
         "step\n< 1 bit: the first such mean below 1 bit; collapses: stretches of such means above 5 bits after "
         "it;\nbest: the lowest such mean and the step it ends at.\n";
}

std::string csv_table(const std::vector<RunResult>& results) {
  std::string s =
      "run,seed,steps,budget,loss,cost,cost_name,first_step_below_1bit,collapses,best,best_step,seconds,status\n";
  auto quoted = [](std::string t) {
    std::string q = "\"";
    for (char ch : t) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const RunResult& r : results)
    s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", quoted(r.name), r.seed, r.steps_done, r.budget,
                     number(r.loss, "{:.6f}"), number(r.bits, "{:.6f}"), quoted(r.cost_name),
                     r.first_below_1bit >= 0 ? std::to_string(r.first_below_1bit) : "",
                     r.collapses >= 0 ? std::to_string(r.collapses) : "",
                     r.best_step >= 0 ? number(r.best, "{:.6f}") : "",
                     r.best_step >= 0 ? std::to_string(r.best_step) : "", number(r.seconds, "{:.3f}"),
                     quoted(r.status));
  return s;
}

void write_tables(const Plan& plan, const std::vector<RunResult>& results) {
  fs::create_directories(plan.out);
  write_file_durably((plan.out / "results.md").string(), markdown_table(results));
  write_file_durably((plan.out / "results.csv").string(), csv_table(results));
}

}  // namespace matmem::tools::sweep
