#include "matmem/models/data/user_data.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/sysfs.hpp"

namespace matmem {
namespace fs = std::filesystem;

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

// An array as a file holds it: dtype as numpy's kind and size ("f4", "i8", "u1", "b1"), shape, raw bytes.
struct RawArray {
  std::string path;  // the file it was read from
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  const unsigned char* data = nullptr;
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::size_t item_size(const std::string& dtype) { return std::size_t(dtype[1] - '0'); }

// The file's bytes, after checking that they fit in memory.
std::vector<unsigned char> read_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(fmt::format("data: {}: cannot be read ({})", path, ec.message()));
  check_fits_in_memory(path, double(size), available_memory());
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes(size);
  if (!in || !in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size)))
    throw Error(fmt::format("data: {}: cannot be read", path));
  return bytes;
}

// Checks that the array's bytes lie within the file.
void check_extent(const std::string& path, const RawArray& a, std::uint64_t available) {
  for (std::int64_t d : a.shape)
    if (d < 0) throw Error(fmt::format("data: {}: tensor {} has shape {}", path, a.name, shape_text(a.shape)));
  const double need = double(element_count(a.shape)) * double(item_size(a.dtype));
  if (need > double(available))
    throw Error(fmt::format("data: {}: tensor {} of shape {} and dtype {} needs {} bytes, but the file holds {} "
                            "(truncated?)", path, a.name, shape_text(a.shape), a.dtype, std::uint64_t(need), available));
}

// --- .npy (version 1–3): magic, version, header length, a Python dict {'descr', 'fortran_order', 'shape'} -----
RawArray parse_npy(const std::string& path, const std::vector<unsigned char>& bytes, const std::string& name) {
  auto fail = [&](const std::string& what) { return Error(fmt::format("data: {}: {} (not a .npy file?)", path, what)); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) throw fail("no .npy magic");
  const int major = bytes[6];
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = std::size_t(bytes[8]) | std::size_t(bytes[9]) << 8, start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw fail("truncated header");
    header_len = std::size_t(bytes[8]) | std::size_t(bytes[9]) << 8 | std::size_t(bytes[10]) << 16 |
                 std::size_t(bytes[11]) << 24;
    start = 12;
  } else {
    throw fail(fmt::format("version {}", major));
  }
  if (start + header_len > bytes.size()) throw fail(fmt::format("a header of {} bytes runs past the end of the file", header_len));
  const std::string h(reinterpret_cast<const char*>(bytes.data() + start), header_len);
  auto value_of = [&](const std::string& key) -> std::string {
    const std::size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) throw fail(fmt::format("header {} has no '{}'", h, key));
    std::size_t v = h.find(':', k);
    if (v == std::string::npos) throw fail(fmt::format("header {}", h));
    ++v;
    while (v < h.size() && h[v] == ' ') ++v;
    return h.substr(v);
  };
  RawArray a;
  a.path = path;
  a.name = name;
  const std::string descr = value_of("descr");
  if (descr.size() < 5 || descr[0] != '\'' || descr[4] != '\'')
    throw Error(fmt::format("data: {}: tensor {} has dtype {}: only numbers (<f4, <f8, integers, bool) are read",
                            path, name, descr.substr(0, descr.find_first_of(",}"))));
  const char order = descr[1];
  a.dtype = descr.substr(2, 2);
  if (order == '>' && a.dtype[1] != '1')
    throw Error(fmt::format("data: {}: tensor {} is big-endian ({}): write it little-endian (astype('<{}'))", path,
                            name, descr.substr(1, 3), a.dtype));
  if (value_of("fortran_order").starts_with("True"))
    throw Error(fmt::format("data: {}: tensor {} is in Fortran order: write it in C order (np.ascontiguousarray)",
                            path, name));
  const std::string shape = value_of("shape");
  if (shape.empty() || shape[0] != '(') throw fail(fmt::format("header {}: shape is not a tuple", h));
  const std::string inner = shape.substr(1, shape.find(')') - 1);
  std::size_t p = 0;
  while (p < inner.size()) {
    while (p < inner.size() && (inner[p] == ' ' || inner[p] == ',')) ++p;
    if (p >= inner.size()) break;
    std::size_t used = 0;
    try {
      a.shape.push_back(std::stoll(inner.substr(p), &used));
    } catch (const std::exception&) {
      throw fail(fmt::format("header {}: shape is not a tuple of numbers", h));
    }
    p += used;
  }
  a.data = bytes.data() + start + header_len;
  check_extent(path, a, bytes.size() - start - header_len);
  return a;
}

// --- safetensors: u64 header length, a JSON header {name: {dtype, shape, data_offsets}}, the data ------------
std::string numpy_dtype(const std::string& st) {
  static const std::pair<const char*, const char*> names[] = {
      {"F32", "f4"}, {"F64", "f8"}, {"I8", "i1"},  {"I16", "i2"}, {"I32", "i4"}, {"I64", "i8"},
      {"U8", "u1"},  {"U16", "u2"}, {"U32", "u4"}, {"U64", "u8"}, {"BOOL", "b1"}};
  for (const auto& [s, n] : names)
    if (st == s) return n;
  return "";
}

std::vector<RawArray> parse_safetensors(const std::string& path, const std::vector<unsigned char>& bytes) {
  auto fail = [&](const std::string& what) { return Error(fmt::format("data: {}: {} (not a safetensors file?)", path, what)); };
  if (bytes.size() < 8) throw fail(fmt::format("only {} bytes", bytes.size()));
  std::uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = n << 8 | bytes[std::size_t(k)];
  if (n > bytes.size() - 8) throw fail(fmt::format("a header of {} bytes runs past the end of the {} bytes", n, bytes.size()));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + std::ptrdiff_t(n));
  } catch (const std::exception& e) {
    throw fail(fmt::format("the header is not JSON ({})", e.what()));
  }
  if (!header.is_object()) throw fail("the header is not a JSON object");
  const std::uint64_t data_bytes = bytes.size() - 8 - n;
  std::vector<RawArray> out;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets") ||
        !e["shape"].is_array() || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      throw fail(fmt::format("entry {} lacks dtype, shape or data_offsets", name));
    RawArray a;
    a.path = path;
    a.name = name;
    const std::string dt = e["dtype"].is_string() ? e["dtype"].get<std::string>() : e["dtype"].dump();
    a.dtype = numpy_dtype(dt);
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer()) throw fail(fmt::format("entry {}: shape {}", name, e["shape"].dump()));
      a.shape.push_back(d.get<std::int64_t>());
    }
    if (a.dtype.empty())
      throw Error(fmt::format("data: {}: tensor {} of shape {} has dtype {}: only F32, F64, integers and BOOL are read",
                              path, name, shape_text(a.shape), dt));
    const std::uint64_t begin = e["data_offsets"][0].get<std::uint64_t>(), end = e["data_offsets"][1].get<std::uint64_t>();
    if (begin > end || end > data_bytes)
      throw Error(fmt::format("data: {}: tensor {} of shape {} lies at bytes {}..{} of data, but the file holds {} "
                              "(truncated?)", path, name, shape_text(a.shape), begin, end, data_bytes));
    a.data = bytes.data() + 8 + n + begin;
    check_extent(path, a, end - begin);
    out.push_back(std::move(a));
  }
  return out;
}

// Element k of the array as a double.
template <class F>
void for_each_value(const RawArray& a, F&& f) {
  const std::int64_t n = element_count(a.shape);
  auto each = [&](auto zero) {
    using T = decltype(zero);
    for (std::int64_t k = 0; k < n; ++k) {
      T v;
      std::memcpy(&v, a.data + std::size_t(k) * sizeof(T), sizeof(T));
      f(k, double(v));
    }
  };
  const std::string& d = a.dtype;
  if (d == "f4") each(float{});
  else if (d == "f8") each(double{});
  else if (d == "i1") each(std::int8_t{});
  else if (d == "i2") each(std::int16_t{});
  else if (d == "i4") each(std::int32_t{});
  else if (d == "i8") each(std::int64_t{});
  else if (d == "u1" || d == "b1") each(std::uint8_t{});
  else if (d == "u2") each(std::uint16_t{});
  else if (d == "u4") each(std::uint32_t{});
  else if (d == "u8") each(std::uint64_t{});
  else throw Error(fmt::format("data: tensor {} has dtype {}", a.name, d));
}

bool is_float(const std::string& d) { return d == "f4" || d == "f8"; }
bool is_integer(const std::string& d) { return d[0] == 'i' || d[0] == 'u'; }

// Element k of `a` as float32, refusing a NaN, an infinity or a float64 beyond float32's range (which would
// become one): training on it would stop many steps later at the first op it reaches, far from the file.
float finite_value(const RawArray& a, std::int64_t k, double v) {
  const float f = float(v);
  if (std::isfinite(f)) return f;
  std::vector<std::int64_t> index(a.shape.size());
  for (std::size_t d = index.size(); d-- > 0;) {
    index[d] = k % a.shape[d];
    k /= a.shape[d];
  }
  throw Error(fmt::format("data: {}: tensor {} of shape {} has {} at index {}: only finite values are read", a.path,
                          a.name, shape_text(a.shape),
                          std::isnan(v)      ? "NaN"
                          : std::isinf(v)    ? (v > 0 ? "inf" : "-inf")
                                             : fmt::format("{:g}, beyond float32's range,", v),
                          shape_text(index)));
}

// One part's three arrays, checked and converted.
void read_part(const std::string& source, const RawArray& inputs, const RawArray& targets, const RawArray* mask,
               const std::string& loss, UserSplit& p) {
  auto where = [&](const RawArray& a) { return fmt::format("data: {}: tensor {} of shape {}", source, a.name, shape_text(a.shape)); };
  const bool classes = loss == "softmax_ce";
  if (inputs.shape.size() != 4 && inputs.shape.size() != 3)
    throw Error(fmt::format("{}: expected [N, T, rows, cols] (or [N, T, cols])", where(inputs)));
  if (!is_float(inputs.dtype))
    throw Error(fmt::format("{} has dtype {}: inputs are float32 or float64", where(inputs), inputs.dtype));
  p.source = source;
  p.count = inputs.shape[0], p.steps = inputs.shape[1];
  p.in_rows = inputs.shape.size() == 4 ? inputs.shape[2] : 1, p.in_cols = inputs.shape.back();
  if (p.count < 1 || p.steps < 1 || p.in_rows < 1 || p.in_cols < 1)
    throw Error(fmt::format("{}: every size must be ≥ 1", where(inputs)));
  auto same_sequences = [&](const RawArray& a) {
    if (a.shape.size() < 2 || a.shape[0] != p.count || a.shape[1] != p.steps)
      throw Error(fmt::format("{}, but inputs has shape {}: N = {} sequences of T = {} steps expected", where(a),
                              shape_text(inputs.shape), p.count, p.steps));
  };
  if (classes) {
    if (targets.shape.size() != 2 && targets.shape.size() != 3)
      throw Error(fmt::format("{}: softmax_ce expects the classes [N, T] or [N, T, rows]", where(targets)));
    if (!is_integer(targets.dtype))
      throw Error(fmt::format("{} has dtype {}: softmax_ce expects integer classes", where(targets), targets.dtype));
    same_sequences(targets);
    p.out_rows = targets.shape.size() == 3 ? targets.shape[2] : 1;
  } else {
    if (targets.shape.size() != 4 && targets.shape.size() != 3)
      throw Error(fmt::format("{}: expected [N, T, rows, cols] (or [N, T, cols])", where(targets)));
    if (!is_float(targets.dtype))
      throw Error(fmt::format("{} has dtype {}: {} targets are float32 or float64", where(targets), targets.dtype, loss));
    same_sequences(targets);
    p.out_rows = targets.shape.size() == 4 ? targets.shape[2] : 1, p.out_cols = targets.shape.back();
  }
  if (p.out_rows < 1 || (!classes && p.out_cols < 1)) throw Error(fmt::format("{}: every size must be ≥ 1", where(targets)));
  p.mask.assign(std::size_t(p.count * p.steps), 1);
  if (mask) {
    if (mask->shape.size() != 2) throw Error(fmt::format("{}: expected [N, T]", where(*mask)));
    same_sequences(*mask);
    for_each_value(*mask, [&](std::int64_t k, double v) { p.mask[std::size_t(k)] = finite_value(*mask, k, v) != 0; });
  }
  for (std::int64_t n = 0; n < p.count; ++n)
    if (std::none_of(p.mask.begin() + n * p.steps, p.mask.begin() + (n + 1) * p.steps, [](std::uint8_t m) { return m; }))
      throw Error(fmt::format("data: {}: sequence {} has no target (its mask is 0 at every step)", source, n));
  p.inputs.resize(std::size_t(element_count(inputs.shape)));
  for_each_value(inputs, [&](std::int64_t k, double v) { p.inputs[std::size_t(k)] = finite_value(inputs, k, v); });
  p.targets.resize(std::size_t(element_count(targets.shape)));
  const std::int64_t per_step = classes ? p.out_rows : p.out_rows * p.out_cols;
  for_each_value(targets, [&](std::int64_t k, double v) {
    if (classes && p.mask[std::size_t(k / per_step)] && v < 0)
      throw Error(fmt::format("{}: class {} of sequence {} at step {} is negative", where(targets), v,
                              k / per_step / p.steps, k / per_step % p.steps));
    p.targets[std::size_t(k)] = finite_value(targets, k, v);
  });
}

void read_safetensors_part(const std::string& path, const std::string& loss, UserSplit& p) {
  const std::vector<unsigned char> bytes = read_bytes(path);
  const std::vector<RawArray> arrays = parse_safetensors(path, bytes);
  auto find = [&](const std::string& name) -> const RawArray* {
    for (const RawArray& a : arrays)
      if (a.name == name) return &a;
    return nullptr;
  };
  for (const char* name : {"inputs", "targets"})
    if (!find(name)) {
      std::string held;
      for (const RawArray& a : arrays) held += (held.empty() ? "" : ", ") + a.name;
      throw Error(fmt::format("data: {}: no tensor {} (it holds: {}; inputs, targets and mask expected)", path, name,
                              held.empty() ? "none" : held));
    }
  read_part(path, *find("inputs"), *find("targets"), find("mask"), loss, p);
}

void read_npy_part(const std::string& dir, const std::string& loss, UserSplit& p) {
  std::vector<unsigned char> bytes[3];
  std::optional<RawArray> arrays[3];
  const char* names[3] = {"inputs", "targets", "mask"};
  for (int k = 0; k < 3; ++k) {
    const std::string path = (fs::path(dir) / (std::string(names[k]) + ".npy")).string();
    if (!fs::exists(path)) {
      if (k == 2) continue;  // no mask: every step counts
      throw Error(fmt::format("data: {}: no tensor {} ({} is missing)", dir, names[k], path));
    }
    bytes[k] = read_bytes(path);
    arrays[k] = parse_npy(path, bytes[k], names[k]);
  }
  read_part(dir, *arrays[0], *arrays[1], arrays[2] ? &*arrays[2] : nullptr, loss, p);
}
}  // namespace

void check_fits_in_memory(const std::string& path, double bytes, double available) {
  // The file is read whole and its values kept as float32: up to twice its size at once.
  if (2 * bytes > available)
    throw Error(fmt::format("data: {}: {} bytes ({:.1f} MiB) do not fit in the {:.1f} MiB of memory available "
                            "(reading needs about twice the file's size): split the data into smaller files or free memory",
                            path, std::uint64_t(bytes), bytes / kMiB, available / kMiB));
}

UserData load_user_data(const UserDataOptions& o) {
  if (o.loss != "bce" && o.loss != "mse" && o.loss != "softmax_ce")
    throw Error(fmt::format("config: task.loss = {}: choose bce, mse or softmax_ce", o.loss));
  if (o.data.empty()) throw Error("config: task data needs task.data = DIR (DIR/train.safetensors or DIR/train/inputs.npy …)");
  if (!fs::is_directory(o.data))
    throw Error(fmt::format("data: {} is not a directory (task.data names the directory of train.safetensors, "
                            "validation.safetensors, test.safetensors, or of train/, validation/, test/ holding .npy files)",
                            o.data));
  UserData d;
  d.kind = o.loss == "bce" ? TargetKind::bits : o.loss == "mse" ? TargetKind::reals : TargetKind::classes;
  for (Split s : {Split::train, Split::validation, Split::test}) {
    const fs::path file = fs::path(o.data) / (std::string(split_name(s)) + ".safetensors");
    const fs::path dir = fs::path(o.data) / split_name(s);
    UserSplit& p = d.parts[std::size_t(s)];
    if (fs::exists(file)) read_safetensors_part(file.string(), o.loss, p);
    else if (fs::is_directory(dir)) read_npy_part(dir.string(), o.loss, p);
    else if (s == Split::train)
      throw Error(fmt::format("data: {} holds neither train.safetensors nor train/ (with inputs.npy, targets.npy, "
                              "mask.npy)", o.data));
  }
  const UserSplit& train = d.parts[0];
  // Classes: C from the config, or the largest counted class + 1.
  if (d.kind == TargetKind::classes) {
    std::int64_t classes = o.classes;
    if (classes == 0)
      for (const UserSplit& p : d.parts)
        for (std::size_t k = 0; k < p.targets.size(); ++k)
          if (p.mask[k / std::size_t(p.out_rows)]) classes = std::max(classes, std::int64_t(p.targets[k]) + 1);
    if (classes < 1) throw Error(fmt::format("config: task.classes = {} must be ≥ 1", classes));
    for (UserSplit& p : d.parts) {
      for (std::size_t k = 0; k < p.targets.size(); ++k)
        if (p.mask[k / std::size_t(p.out_rows)] && p.targets[k] >= float(classes)) {
          const std::size_t step = k / std::size_t(p.out_rows);
          throw Error(fmt::format("data: {}: class {} of sequence {} at step {} is not one of 0..{} (task.classes = {})",
                                  p.source, p.targets[k], step / std::size_t(p.steps), step % std::size_t(p.steps),
                                  classes - 1, classes));
        }
      if (p.count > 0) p.out_cols = classes;
    }
  }
  for (const UserSplit& p : d.parts)
    if (p.count > 0 && (p.in_rows != train.in_rows || p.in_cols != train.in_cols || p.out_rows != train.out_rows ||
                        p.out_cols != train.out_cols))
      throw Error(fmt::format("data: {}: frames {}x{} → {}x{}, but {}'s are {}x{} → {}x{}", p.source, p.in_rows,
                              p.in_cols, p.out_rows, p.out_cols, train.source, train.in_rows, train.in_cols,
                              train.out_rows, train.out_cols));
  return d;
}

UserDataTask::UserDataTask(UserDataOptions o) : UserDataTask(o, std::make_shared<const UserData>(load_user_data(o))) {}

UserDataTask::UserDataTask(UserDataOptions o, std::shared_ptr<const UserData> data) : o_(std::move(o)), data_(std::move(data)) {
  if (o_.batch < 1) throw Error(fmt::format("data: batch = {} must be ≥ 1", o_.batch));
  if (train().count < o_.batch)
    throw Error(fmt::format("data: {} holds {} training sequences, fewer than a batch of {} (set batch lower)",
                            train().source, train().count, o_.batch));
}

std::vector<std::int64_t> UserDataTask::epoch_order(std::int64_t epoch) const {
  Rng rng((o_.seed ^ 0x5eed0fda7a5eed0fULL) + 0x9e3779b97f4a7c15ULL * std::uint64_t(epoch + 1));
  std::vector<std::int64_t> p(std::size_t(train().count));
  std::iota(p.begin(), p.end(), 0);
  for (std::int64_t k = std::int64_t(p.size()) - 1; k > 0; --k)
    std::swap(p[std::size_t(k)], p[std::size_t(rng.uniform_int(std::int64_t(0), k))]);
  return p;
}

void UserDataTask::fill(const UserSplit& p, const std::int64_t* index, std::int64_t B, Sequence& s, DType dtype) const {
  s.reset();
  s.kind = data_->kind;
  const std::int64_t T = p.steps, r = p.in_rows, c = p.in_cols, ro = p.out_rows, co = p.out_cols;
  const bool classes = data_->kind == TargetKind::classes;
  auto counted = [&](std::int64_t b, std::int64_t t) { return p.mask[std::size_t(index[b] * T + t)] != 0; };
  std::int64_t last = -1;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = T - 1; t > last; --t)
      if (counted(b, t)) {
        last = t;
        break;
      }
  bool all_counted = true;
  dispatch(dtype, [&](auto z) {
    using V = decltype(z);
    for (std::int64_t t = 0; t <= last; ++t) {
      Tensor& x = s.add_input(dtype, matrices(B, r, c));
      V* xv = static_cast<V*>(x.raw());
      for (std::int64_t b = 0; b < B; ++b) {
        const float* from = p.inputs.data() + (index[b] * T + t) * r * c;
        for (std::int64_t i = 0; i < r; ++i)
          for (std::int64_t j = 0; j < c; ++j) xv[x.shape().offset(b, 0, i, j)] = V(from[i * c + j]);
      }
      bool any = false;
      for (std::int64_t b = 0; b < B; ++b) any = any || counted(b, t);
      if (!any) continue;
      Tensor& y = s.add_target(dtype, matrices(B, ro, co), t);
      V* yv = static_cast<V*>(y.raw());
      for (std::int64_t b = 0; b < B; ++b) {
        const bool m = counted(b, t);
        all_counted = all_counted && m;
        s.lane_mask.push_back(m ? 1.0f : 0.0f);
        if (!m) continue;  // an uncounted lane's target stays 0 (its class may be anything)
        if (classes) {
          const float* from = p.targets.data() + (index[b] * T + t) * ro;
          for (std::int64_t i = 0; i < ro; ++i) yv[y.shape().offset(b, 0, i, std::int64_t(from[i]))] = V(1);
        } else {
          const float* from = p.targets.data() + (index[b] * T + t) * ro * co;
          for (std::int64_t i = 0; i < ro; ++i)
            for (std::int64_t j = 0; j < co; ++j) yv[y.shape().offset(b, 0, i, j)] = V(from[i * co + j]);
        }
      }
    }
  });
  if (all_counted) s.lane_mask.clear();  // every lane counts at every target step: the plain loss
}

void UserDataTask::sample_step_into(std::int64_t step, Rng&, Sequence& out, DType dtype) const {
  const std::int64_t E = steps_per_epoch(), epoch = step / E, at = (step % E) * o_.batch;
  if (epoch != cached_epoch_) {
    order_ = epoch_order(epoch);
    cached_epoch_ = epoch;
  }
  batch_index_.assign(order_.begin() + at, order_.begin() + at + o_.batch);
  fill(train(), batch_index_.data(), o_.batch, out, dtype);
}

void UserDataTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  std::vector<std::int64_t> index(std::size_t(o_.batch));
  for (auto& i : index) i = std::int64_t(rng.uniform_int(std::uint64_t(train().count)));
  fill(train(), index.data(), o_.batch, out, dtype);
}

void UserDataTask::sample_size_into(Rng& rng, std::int64_t, Sequence& out, DType dtype) const {
  sample_into(rng, out, dtype);
}

void UserDataTask::split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out, DType dtype) const {
  const UserSplit& p = data_->parts[std::size_t(s)];
  if (first < 0 || count < 1 || first + count > p.count)
    throw Error(fmt::format("data: sequences {}..{} of the {} part, which holds {}", first, first + count - 1,
                            split_name(s), p.count));
  std::vector<std::int64_t> index(static_cast<std::size_t>(count));
  std::iota(index.begin(), index.end(), first);
  fill(p, index.data(), count, out, dtype);
}

}  // namespace matmem
