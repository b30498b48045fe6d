#include "matmem/tools/plot/runs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/runtime/error.hpp"

namespace matmem::tools::plot {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

double number(const std::string& text, const std::filesystem::path& file, int line) {
  if (text == "nan" || text == "-nan" || text == "NaN") return NAN;
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(fmt::format("{}:{}: '{}' is not a number", file.string(), line, text));
}

std::string unquoted(const std::string& json) {
  if (json.size() >= 2 && json.front() == '"' && json.back() == '"') return json.substr(1, json.size() - 2);
  return json;
}

// Keys that change how a run is carried out or logged, not what it learns.
bool incidental(const std::string& key) {
  static const std::set<std::string> keys = {"seed",  "steps",          "threads",          "log_every",
                                             "checkpoint_every", "anomaly", "memory.check", "nonfinite",
                                             "nonfinite.max_skips", "ntm.memory_segment"};
  return keys.count(key) > 0;
}

double quantile(std::vector<double>& v, double q) {  // v sorted
  const double pos = q * double(v.size() - 1);
  const std::size_t i = std::size_t(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (v[i + 1] - v[i]) * (pos - double(i));
}

}  // namespace

std::string Run::model() const { return config.count("model") ? unquoted(config.at("model")) : "?"; }
std::string Run::task() const { return config.count("task") ? unquoted(config.at("task")) : "?"; }
std::string Run::seed() const { return config.count("seed") ? config.at("seed") : "?"; }
std::int64_t Run::batch() const {
  const auto it = config.find("batch");
  std::int64_t b = 0;
  if (it != config.end()) {
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), b);
    if (ec != std::errc() || end != text.data() + text.size()) b = 0;
  }
  if (b < 1) throw Error(fmt::format("{}: config.json has no batch of 1 or more sequences, which --x sequences needs",
                                     dir.string()));
  return b;
}

Run read_run(const std::filesystem::path& dir) {
  Run run;
  run.dir = dir.lexically_normal();
  if (run.dir.filename().empty()) run.dir = run.dir.parent_path();  // DIR/ as a shell's completion writes it
  if (!std::filesystem::is_directory(dir))
    throw Error(fmt::format("{}: no such run directory (a run holds metrics.csv and config.json)", dir.string()));
  const std::filesystem::path cfg = dir / "config.json", csv = dir / "metrics.csv";
  std::ifstream cf(cfg);
  if (!cf) throw Error(fmt::format("{}: cannot read (is {} a run of matmem train?)", cfg.string(), dir.string()));
  nlohmann::json j;
  try {
    cf >> j;
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", cfg.string(), e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("{}: not a JSON object", cfg.string()));
  // Numbers as their shortest decimal, so that a value written 0 by one version and 0.0 by another is one value.
  for (const auto& [k, v] : j.items())
    run.config[k] = v.is_number_float() ? fmt::format("{}", v.get<double>()) : v.dump();
  std::ifstream mf(csv);
  if (!mf) throw Error(fmt::format("{}: cannot read (is {} a run of matmem train?)", csv.string(), dir.string()));
  std::string line;
  if (!std::getline(mf, line)) throw Error(fmt::format("{}: empty", csv.string()));
  const std::vector<std::string> header = split(line);
  auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw Error(fmt::format("{}: no column {} in its header '{}'", csv.string(), name, line));
    return std::size_t(it - header.begin());
  };
  const std::size_t cs = column("step"), cl = column("loss"), cb = column("bits_per_sequence");
  const auto seconds_at = std::find(header.begin(), header.end(), "seconds");  // not needed to plot
  int n = 1;
  while (std::getline(mf, line)) {
    ++n;
    if (line.empty()) continue;
    const std::vector<std::string> cells = split(line);
    if (cells.size() != header.size())
      throw Error(fmt::format("{}:{}: {} fields, the header has {}", csv.string(), n, cells.size(), header.size()));
    run.step.push_back(number(cells[cs], csv, n));
    run.seconds.push_back(seconds_at == header.end() ? NAN : number(cells[std::size_t(seconds_at - header.begin())], csv, n));
    run.loss.push_back(number(cells[cl], csv, n));
    run.bits.push_back(number(cells[cb], csv, n));
  }
  return run;
}

std::vector<RunGroup> group_runs(const std::vector<Run>& runs) {
  std::vector<std::map<std::string, std::string>> keys;  // per group: its config without incidental keys
  std::vector<RunGroup> groups;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    std::map<std::string, std::string> key;
    for (const auto& [name, value] : runs[k].config)
      if (!incidental(name)) key[name] = value;
    // One group: the same keys and values; or, for seeds of one experiment (runs in one directory), the same
    // value in every key both have (a run resumed by a newer version has the keys added since, its sibling
    // not). Runs elsewhere that lack a key stay apart: the key's value in them is unknown.
    const auto joins = [&](std::size_t g) {
      if (keys[g] == key) return true;
      if (runs[groups[g].runs[0]].dir.parent_path() != runs[k].dir.parent_path()) return false;
      for (const auto& [name, value] : key)
        if (const auto o = keys[g].find(name); o != keys[g].end() && o->second != value) return false;
      return true;
    };
    std::size_t g = 0;
    while (g < groups.size() && !joins(g)) ++g;
    if (g == groups.size()) {
      keys.push_back(key);
      groups.push_back({"", {k}});
    } else {
      groups[g].runs.push_back(k);
    }
  }
  // A label names the model and task, then every other key in which the group differs from another group of
  // the same model and task (a MatRNN's unused ntm.* keys do not tell it from a MatNTM). A key only one of
  // two groups has (a run written before the key existed) does not count: its value in the older run is
  // unknown, and every key added since would otherwise be named.
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Run& first = runs[groups[g].runs[0]];
    std::set<std::string> differing;
    for (std::size_t h = 0; h < groups.size(); ++h) {
      const Run& other = runs[groups[h].runs[0]];
      if (h == g || other.model() != first.model() || other.task() != first.task()) continue;
      for (const auto* a : {&keys[g], &keys[h]})
        for (const auto& [name, value] : *a) {
          const auto x = keys[g].find(name), y = keys[h].find(name);
          if (x != keys[g].end() && y != keys[h].end() && x->second != y->second) differing.insert(name);
        }
    }
    std::string label = first.model() + " " + first.task();
    for (const std::string& name : differing) label += fmt::format(", {}={}", name, unquoted(keys[g].find(name)->second));
    groups[g].label = label;
  }
  // Groups the keys cannot tell apart are told apart by their directories: a run's own name, or its parent's
  // when the run is one seed of several (…/forget-bias-0/seed1 -> forget-bias-0).
  std::vector<bool> alike(groups.size(), false);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t h = 0; h < groups.size(); ++h) alike[g] = alike[g] || (h != g && groups[h].label == groups[g].label);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (!alike[g]) continue;
    const std::filesystem::path& dir = runs[groups[g].runs[0]].dir;
    const std::string own = dir.filename().string();
    groups[g].label += fmt::format(" ({})", own.rfind("seed", 0) == 0 ? dir.parent_path().filename().string() : own);
  }
  return groups;
}

Curve aggregate(const std::vector<std::vector<double>>& x, const std::vector<std::vector<double>>& y, Spread spread) {
  std::map<double, std::vector<double>> at;
  for (std::size_t r = 0; r < x.size(); ++r)
    for (std::size_t k = 0; k < x[r].size() && k < y[r].size(); ++k)
      if (std::isfinite(x[r][k])) {
        std::vector<double>& v = at[x[r][k]];
        if (std::isfinite(y[r][k])) v.push_back(y[r][k]);
      }
  Curve c;
  for (auto& [xv, v] : at) {
    c.x.push_back(xv);
    if (v.empty()) {
      c.median.push_back(NAN), c.lo.push_back(NAN), c.hi.push_back(NAN);
      continue;
    }
    std::sort(v.begin(), v.end());
    c.median.push_back(quantile(v, 0.5));
    c.lo.push_back(spread == Spread::minmax ? v.front() : quantile(v, 0.25));
    c.hi.push_back(spread == Spread::minmax ? v.back() : quantile(v, 0.75));
  }
  return c;
}

std::vector<double> smooth(const std::vector<double>& y, int window) {
  if (window <= 1) return y;
  const std::ptrdiff_t n = std::ptrdiff_t(y.size()), before = (window - 1) / 2, after = window / 2;
  std::vector<double> out(y.size(), NAN);
  for (std::ptrdiff_t k = 0; k < n; ++k) {
    double sum = 0;
    int count = 0;
    for (std::ptrdiff_t j = std::max<std::ptrdiff_t>(0, k - before); j <= std::min(n - 1, k + after); ++j)
      if (std::isfinite(y[std::size_t(j)])) sum += y[std::size_t(j)], ++count;
    if (count) out[std::size_t(k)] = sum / count;
  }
  return out;
}

}  // namespace matmem::tools::plot
