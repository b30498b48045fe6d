#include "matmem/models/capacity/checkpoint.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "matmem/models/capacity/generators.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"

namespace matmem::capacity {

namespace {

// `name` as stored, or under the trainer's "param/" namespace (models/training writes param/<name>).
std::string resolve(const TensorFile& file, const std::string& name) {
  if (file.tensors.count(name) || !file.tensors.count("param/" + name)) return name;
  return "param/" + name;
}

Matrix to_matrix(const TensorFile& file, const std::string& name, const std::string& path) {
  auto it = file.tensors.find(name);
  if (it == file.tensors.end()) throw Error(fmt::format("capacity: checkpoint '{}' has no tensor '{}'", path, name));
  const Shape& s = it->second.shape();
  if (s.batch != 1 || s.slots != 1)
    throw Error(fmt::format("capacity: '{}' in '{}' is {}, not a matrix", name, path, s.str()));
  Matrix m(std::size_t(s.rows), std::size_t(s.cols));
  for (std::int64_t k = 0; k < s.numel(); ++k) m.data[std::size_t(k)] = it->second.get(k);
  return m;
}

}  // namespace

MatrixNet load_matrix_net(const CheckpointSource& src, Noise noise, Rng& rng) {
  // A run directory (as `matmem train --out` writes) or the file itself.
  const std::string path = std::filesystem::is_directory(src.path)
                               ? (std::filesystem::path(src.path) / "checkpoint.safetensors").string()
                               : src.path;
  const TensorFile file = read_safetensors(path);
  const std::string u_name = resolve(file, src.prefix + "/h/U"), v_name = resolve(file, src.prefix + "/h/V");
  if (!file.tensors.count(u_name) || !file.tensors.count(v_name)) {
    std::vector<std::string> prefixes;
    for (const auto& [n, t] : file.tensors)
      if (n.size() > 4 && n.ends_with("/h/U")) {
        const std::string p = n.substr(0, n.size() - 4);
        prefixes.push_back(p.starts_with("param/") ? p.substr(6) : p);
      }
    throw Error(fmt::format("capacity: checkpoint '{}' has no '{}/h/U' and '{}/h/V' (nor under param/); recurrent terms "
                            "found under: {}",
                            path, src.prefix, src.prefix,
                            prefixes.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(prefixes, ", "))));
  }
  MatrixNet net;
  net.u = to_matrix(file, u_name, path);
  net.v = to_matrix(file, v_name, path);
  net.noise = noise;
  net.w = src.w_name.empty() ? random_input(net.u.rows, net.v.rows, rng) : to_matrix(file, resolve(file, src.w_name), path);
  check(net);
  return net;
}

}  // namespace matmem::capacity
