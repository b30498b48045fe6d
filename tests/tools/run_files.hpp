// A run directory's files read back for the tests of tools/: the validation curve of validation.csv, its
// lowest point found by the test itself, and the parameters of checkpoint.safetensors and best.safetensors.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/runtime/safetensors.hpp"

namespace matmem::testing {

// One row of validation.csv (step,epoch,loss,error,accuracy,best,best_step): an evaluation of the validation
// part; `loss_text` is the loss as written (6 decimals), to compare with what `matmem eval --csv` prints.
struct Evaluation {
  std::int64_t step = 0;
  double loss = 0, error = 0;
  std::string loss_text;
};

// The evaluations of a run, in order; the file's own best and best_step columns are not read.
inline std::vector<Evaluation> validation_curve(const std::filesystem::path& run) {
  std::ifstream in(run / "validation.csv");
  std::vector<Evaluation> rows;
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (cells.size() < 4) continue;
    rows.push_back({std::stoll(cells[0]), std::stod(cells[2]), std::stod(cells[3]), cells[2]});
  }
  return rows;
}

// The index of the first evaluation of lowest loss (by_loss) or error: early stopping's best, since a later
// equal value is no better.
inline std::size_t first_lowest(const std::vector<Evaluation>& curve, bool by_loss) {
  std::size_t best = 0;
  for (std::size_t k = 1; k < curve.size(); ++k)
    if ((by_loss ? curve[k].loss < curve[best].loss : curve[k].error < curve[best].error)) best = k;
  return best;
}

inline std::string curve_text(const std::vector<Evaluation>& curve) {
  std::string s;
  for (const Evaluation& e : curve)
    s += "step " + std::to_string(e.step) + ": loss " + e.loss_text + ", error " + std::to_string(e.error) + "\n";
  return s;
}

// The parameters (entries param/NAME) of a checkpoint or best-parameters file, by name.
inline std::map<std::string, Tensor> parameters_in(const std::filesystem::path& file) {
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : read_safetensors(file.string()).tensors)
    if (name.rfind("param/", 0) == 0) out.emplace(name.substr(6), std::move(t));
  return out;
}

inline bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// The names of the parameters whose values differ between two files of the same parameters.
inline std::vector<std::string> changed_parameters(const std::map<std::string, Tensor>& a,
                                                   const std::map<std::string, Tensor>& b) {
  std::vector<std::string> changed;
  for (const auto& [name, t] : a)
    if (const auto it = b.find(name); it == b.end() || !same_tensor(t, it->second)) changed.push_back(name);
  return changed;
}

}  // namespace matmem::testing
