// The user's own sequences (models/data/user_data.hpp): safetensors and .npy parts written here, read back
// frame by frame; the lane mask's loss and cost (models/core/model.hpp) by value and gradchecked; and each
// refusal's message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/models/core/model.hpp"
#include "matmem/models/data/user_data.hpp"
#include "matmem/runtime/sysfs.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/models/data/small_data.hpp"
#include "matmem/models/core/model_gradcheck.hpp"

using namespace matmem;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// N = 3 sequences of T = 4 steps, inputs 2x3, targets 1x2. Sequence 0 counts steps 1 and 3, sequence 1
// step 2, sequence 2 step 1.
constexpr std::int64_t N = 3, T = 4, R = 2, C = 3, RO = 1, CO = 2;
double input_value(std::int64_t n, std::int64_t t, std::int64_t i, std::int64_t j) { return n * 100 + t * 10 + i * 3 + j; }
double target_value(std::int64_t n, std::int64_t t, std::int64_t j) { return double((n + t + j) % 2); }
bool counted(std::int64_t n, std::int64_t t) { return (n == 0 && (t == 1 || t == 3)) || (n == 1 && t == 2) || (n == 2 && t == 1); }

TensorFile tensors() {
  TensorFile f;
  Tensor x(DType::f32, memory(N, T, R, C)), y(DType::f32, memory(N, T, RO, CO)), m(DType::f32, parameter(N, T));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < C; ++j) x.set(x.shape().offset(n, t, i, j), input_value(n, t, i, j));
      for (std::int64_t j = 0; j < CO; ++j) y.set(y.shape().offset(n, t, 0, j), target_value(n, t, j));
      m.set(m.shape().offset(0, 0, n, t), counted(n, t) ? 1.0 : 0.0);
    }
  f.tensors.emplace("inputs", std::move(x));
  f.tensors.emplace("targets", std::move(y));
  f.tensors.emplace("mask", std::move(m));
  return f;
}

// A .npy file (version 1) of `descr` and `shape` holding `data`.
void write_npy(const fs::path& path, const std::string& descr, const std::string& shape, const void* data,
               std::size_t bytes, bool fortran = false) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff), static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out << header;
  out.write(static_cast<const char*>(data), std::streamsize(bytes));
}
template <class V>
void write_npy(const fs::path& path, const std::string& descr, const std::string& shape, const std::vector<V>& v) {
  write_npy(path, descr, shape, v.data(), v.size() * sizeof(V));
}

// The same part as .npy files in `dir`: inputs <f4, targets <f8, mask |u1.
void write_npy_part(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<float> x;
  std::vector<double> y;
  std::vector<std::uint8_t> m;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < C; ++j) x.push_back(float(input_value(n, t, i, j)));
      for (std::int64_t j = 0; j < CO; ++j) y.push_back(target_value(n, t, j));
      m.push_back(counted(n, t));
    }
  write_npy(dir / "inputs.npy", "<f4", "(3, 4, 2, 3)", x);
  write_npy(dir / "targets.npy", "<f8", "(3, 4, 1, 2)", y);
  write_npy(dir / "mask.npy", "|u1", "(3, 4)", m);
}

UserDataOptions options(const std::string& dir, const std::string& loss = "bce", std::int64_t batch = 2) {
  UserDataOptions o;
  o.data = dir, o.loss = loss, o.batch = batch;
  return o;
}

// Sequences first.. of the train part, checked frame by frame against the values written.
void check_batch(const UserDataTask& task, std::int64_t first, std::int64_t count) {
  Sequence s;
  task.split_batch_into(Split::train, first, count, s, DType::f64);
  std::int64_t last = -1;
  std::vector<std::int64_t> steps;
  for (std::int64_t t = 0; t < T; ++t) {
    bool any = false;
    for (std::int64_t b = 0; b < count; ++b) any = any || counted(first + b, t);
    if (any) steps.push_back(t), last = t;
  }
  CHECK(s.kind == TargetKind::bits);
  REQUIRE(std::int64_t(s.inputs.size()) == last + 1);  // no frame after the batch's last counted step
  CHECK(s.target_steps == steps);
  bool every = true;  // every lane counted at every target step: no lane mask
  for (std::int64_t t : steps)
    for (std::int64_t b = 0; b < count; ++b) every = every && counted(first + b, t);
  if (every) CHECK(s.lane_mask.empty());
  else REQUIRE(s.lane_mask.size() == steps.size() * std::size_t(count));
  for (std::int64_t t = 0; t <= last; ++t) {
    REQUIRE(s.inputs[std::size_t(t)].shape() == matrices(count, R, C));
    for (std::int64_t b = 0; b < count; ++b)
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < C; ++j)
          CHECK(s.inputs[std::size_t(t)].get(s.inputs[std::size_t(t)].shape().offset(b, 0, i, j)) == input_value(first + b, t, i, j));
  }
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Tensor& y = s.targets[k];
    REQUIRE(y.shape() == matrices(count, RO, CO));
    for (std::int64_t b = 0; b < count; ++b) {
      const bool m = counted(first + b, steps[k]);
      if (!every) CHECK(s.lane_mask[k * std::size_t(count) + std::size_t(b)] == (m ? 1.0f : 0.0f));
      for (std::int64_t j = 0; j < CO; ++j)
        CHECK(y.get(y.shape().offset(b, 0, 0, j)) == (m ? target_value(first + b, steps[k], j) : 0.0));
    }
  }
}

// Logits mat(x) of the input frame: outputs that depend on the input, so each step's loss differs.
class Linear : public Model {
 public:
  Linear(std::int64_t in_rows, std::int64_t in_cols, std::int64_t rows, std::int64_t cols)
      : Model("linear", DType::f64, 3) {
    set_io(in_rows, in_cols, rows, cols);
  }
  void step(Step& s) override { s.output(s.mat("out", {{"x", s.input()}}, output_rows(), output_cols(), 0.1)); }
};

// A random sequence of `steps` frames with targets of `kind` at steps 1.., and a lane mask.
Sequence masked_sequence(TargetKind kind, std::int64_t B, std::int64_t steps, std::int64_t rows, std::int64_t cols,
                         const std::vector<float>& mask, std::uint64_t seed) {
  Rng rng(seed);
  Sequence s;
  s.kind = kind;
  for (std::int64_t t = 0; t < steps; ++t) {
    Tensor& x = s.add_input(DType::f64, matrices(B, 2, 2));
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform(-1, 1));
    if (t == 0) continue;
    Tensor& y = s.add_target(DType::f64, matrices(B, rows, cols), t);
    if (kind == TargetKind::classes) {
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < rows; ++i)
          y.set(y.shape().offset(b, 0, i, std::int64_t(rng.uniform_int(std::uint64_t(cols)))), 1.0);
    } else {
      for (std::int64_t k = 0; k < y.numel(); ++k) y.set(k, kind == TargetKind::bits ? double(rng.coin()) : rng.normal());
    }
  }
  s.lane_mask = mask;
  return s;
}

// The masked loss and cost worked out from the logits: (1/B') Σ_b (1/n_b) Σ_k m ℓ.
std::pair<double, double> expected(const Sequence& s, const SequenceResult& r) {
  const std::int64_t B = s.inputs[0].shape().batch;
  std::vector<double> n(std::size_t(B), 0.0);
  for (std::size_t k = 0; k < s.targets.size(); ++k)
    for (std::int64_t b = 0; b < B; ++b) n[std::size_t(b)] += s.lane_mask[k * std::size_t(B) + std::size_t(b)];
  double lanes = 0;
  for (double v : n) lanes += v > 0;
  double loss = 0, cost = 0, se = 0, ts = 0, tq = 0, count = 0;
  for (std::size_t k = 0; k < s.targets.size(); ++k) {
    const Tensor& y = s.targets[k];
    const Tensor x = r.logits[k].value_copy();
    const std::int64_t rows = y.shape().rows, cols = y.shape().cols;
    for (std::int64_t b = 0; b < B; ++b) {
      if (s.lane_mask[k * std::size_t(B) + std::size_t(b)] == 0) continue;
      double l = 0;
      for (std::int64_t i = 0; i < rows; ++i) {
        if (s.kind == TargetKind::classes) {
          double top = -1e300, lse = 0, picked = 0;
          std::int64_t arg = 0, want = 0;
          for (std::int64_t j = 0; j < cols; ++j) {
            const double v = x.get(x.shape().offset(b, 0, i, j));
            if (v > top) top = v, arg = j;
            if (y.get(y.shape().offset(b, 0, i, j)) == 1) want = j, picked = v;
          }
          for (std::int64_t j = 0; j < cols; ++j) lse += std::exp(x.get(x.shape().offset(b, 0, i, j)));
          l += (std::log(lse) - picked) / double(rows);
          cost += arg != want;
          continue;
        }
        for (std::int64_t j = 0; j < cols; ++j) {
          const double v = x.get(x.shape().offset(b, 0, i, j)), t = y.get(y.shape().offset(b, 0, i, j));
          if (s.kind == TargetKind::bits) {
            l += (std::max(v, 0.0) - v * t + std::log1p(std::exp(-std::abs(v)))) / double(rows * cols);
            cost += (v > 0) != (t > 0.5);
          } else {
            l += (v - t) * (v - t) / double(rows * cols);
            se += (v - t) * (v - t), ts += t, tq += t * t, ++count;
          }
        }
      }
      loss += l / n[std::size_t(b)] / lanes;
    }
  }
  if (s.kind == TargetKind::reals) return {loss, se / (tq - ts * ts / count)};
  return {loss, cost / lanes};
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(not refused)";
}
}  // namespace

TEST_CASE("data: a safetensors part read frame by frame, its mask as lane masks", "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-st");
  write_safetensors((dir / "train.safetensors").string(), tensors());
  write_safetensors((dir / "test.safetensors").string(), tensors());
  const UserDataTask task(options(dir.string()));
  CHECK(task.split_size(Split::train) == 3);
  CHECK(task.split_size(Split::validation) == 0);  // no file: an empty part
  CHECK(task.split_size(Split::test) == 3);
  CHECK(task.input_rows() == R);
  CHECK(task.input_cols() == C);
  CHECK(task.output_rows() == RO);
  CHECK(task.output_cols() == CO);
  CHECK(task.steps_per_epoch() == 1);
  check_batch(task, 0, 3);  // steps 1, 2, 3 are targets; 4 frames
  check_batch(task, 1, 2);  // sequences 1 and 2: steps 1, 2; 3 frames
  check_batch(task, 2, 1);  // sequence 2 alone: step 1; 2 frames, every lane counted
}

TEST_CASE("data: .npy parts give the same sequences as safetensors", "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-npy");
  write_npy_part(dir / "train");
  write_npy_part(dir / "validation");
  const UserDataTask task(options(dir.string()));
  CHECK(task.split_size(Split::validation) == 3);
  CHECK(task.split_size(Split::test) == 0);
  check_batch(task, 0, 3);
  check_batch(task, 1, 2);
}

TEST_CASE("data: a batch whose lanes all count at every target step has no lane mask", "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-full");
  TensorFile f = tensors();
  f.tensors.erase("mask");  // every step counts
  write_safetensors((dir / "train.safetensors").string(), f);
  const UserDataTask task(options(dir.string()));
  Sequence s;
  task.split_batch_into(Split::train, 0, 3, s, DType::f32);
  CHECK(s.inputs.size() == 4);
  CHECK(s.target_steps == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(s.lane_mask.empty());
}

TEST_CASE("data: softmax_ce reads integer classes as one-hot rows, and an uncounted step's class is free", "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-classes");
  write_npy_part(dir / "train");
  // Classes [N, T] as int64: sequence n's class at step t is (n + t) mod 4, −1 where it is not counted.
  std::vector<std::int64_t> y;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t t = 0; t < T; ++t) y.push_back(counted(n, t) ? (n + t) % 4 : -1);
  write_npy(dir / "train" / "targets.npy", "<i8", "(3, 4)", y);
  UserDataTask task(options(dir.string(), "softmax_ce", 3));
  CHECK(task.target_kind() == TargetKind::classes);
  CHECK(task.output_rows() == 1);
  CHECK(task.output_cols() == 4);  // the largest counted class, 3, + 1
  Sequence s;
  task.split_batch_into(Split::train, 0, 3, s, DType::f32);
  CHECK(s.kind == TargetKind::classes);
  REQUIRE(s.targets.size() == 3);
  for (std::size_t k = 0; k < 3; ++k)
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t j = 0; j < 4; ++j) {
        const std::int64_t t = s.target_steps[k];
        INFO("step " << t << " sequence " << b << " column " << j);
        CHECK(s.targets[k].get(s.targets[k].shape().offset(b, 0, 0, j)) == (counted(b, t) && (b + t) % 4 == j ? 1.0 : 0.0));
      }
  // task.classes wider than the data: more columns.
  UserDataOptions o = options(dir.string(), "softmax_ce", 3);
  o.classes = 6;
  CHECK(UserDataTask(o).output_cols() == 6);
}

TEST_CASE("data: epochs visit every training sequence once, in an order fixed by the seed", "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-epochs");
  write_safetensors((dir / "train.safetensors").string(), tensors());
  const UserDataTask task(options(dir.string(), "bce", 1));
  CHECK(task.steps_per_epoch() == 3);
  Rng rng(1);
  std::vector<double> firsts;
  for (std::int64_t step = 0; step < 3; ++step) {
    Sequence s;
    task.sample_step_into(step, rng, s, DType::f64);
    firsts.push_back(s.inputs[0].get(0));  // input_value(n, 0, 0, 0) = 100 n
  }
  std::sort(firsts.begin(), firsts.end());
  CHECK(firsts == std::vector<double>{0, 100, 200});
  CHECK(task.epoch_order(0) == UserDataTask(options(dir.string(), "bce", 1)).epoch_order(0));
}

TEST_CASE("masked loss and cost: each sequence's mean over its counted steps, by value", "[tasks][user-data][target-kinds]") {
  // B = 3, target steps 1..3: sequence 0 counts steps 1 and 3, sequence 1 step 2, sequence 2 none.
  const std::vector<float> mask = {1, 0, 0, 0, 1, 0, 1, 0, 0};
  for (TargetKind kind : {TargetKind::bits, TargetKind::reals, TargetKind::classes}) {
    INFO(target_kind_name(kind));
    Linear model(2, 2, 2, 3);
    model.build();
    perturb_parameters(model, 0.5, 7);
    Sequence s = masked_sequence(kind, 3, 4, 2, 3, mask, 11);
    Tape tape(DType::f64);
    Unroller u(model, tape);
    const SequenceResult& r = u.run(s);
    const auto [loss, cost] = expected(s, r);
    CHECK(r.loss.item() == Approx(loss).epsilon(1e-12));
    CHECK(r.bits == Approx(cost).epsilon(1e-12));
    // A masked lane's target changes nothing: not the loss, not the cost.
    const double before = r.loss.item(), bits = r.bits;
    Tensor& y = s.targets[0];
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j) y.set(y.shape().offset(1, 0, i, j), kind == TargetKind::classes ? (j == 2) : 5.0 * (j + 1));
    const SequenceResult& again = u.run(s);
    CHECK(again.loss.item() == before);
    CHECK(again.bits == bits);
  }
}

TEST_CASE("masked loss: every lane counted equals the loss without a mask", "[tasks][user-data][target-kinds]") {
  for (TargetKind kind : {TargetKind::bits, TargetKind::reals, TargetKind::classes}) {
    INFO(target_kind_name(kind));
    Linear model(2, 2, 1, 3);
    model.build();
    perturb_parameters(model, 0.5, 7);
    Sequence s = masked_sequence(kind, 2, 3, 1, 3, std::vector<float>(4, 1.0f), 5);
    Tape tape(DType::f64);
    Unroller u(model, tape);
    const double masked = u.run(s).loss.item(), masked_bits = u.run(s).bits;
    s.lane_mask.clear();
    const SequenceResult& plain = u.run(s);
    CHECK(masked == Approx(plain.loss.item()).epsilon(1e-12));
    CHECK(masked_bits == Approx(plain.bits).epsilon(1e-12));
  }
}

TEST_CASE("masked loss: gradchecked for each target kind", "[tasks][user-data][target-kinds]") {
  const std::vector<float> mask = {1, 0, 1, 0, 1, 1};
  for (TargetKind kind : {TargetKind::bits, TargetKind::reals, TargetKind::classes}) {
    INFO(target_kind_name(kind));
    Linear model(2, 2, 2, 3);
    const ModelGradcheckReport r =
        gradcheck_model(model, masked_sequence(kind, 3, 3, 2, 3, mask, 17), {.sigma = 0.5, .seed = 3});
    INFO(r.str());
    CHECK(r.passed);
    CHECK(r.elements_checked == model.params().element_count());
  }
}

TEST_CASE("masked sequences split into parts keep their lanes' masks", "[tasks][user-data]") {
  const Sequence s = masked_sequence(TargetKind::bits, 3, 3, 1, 2, {1, 0, 1, 0, 1, 1}, 2);
  Sequence part;
  batch_slice(s, 1, 2, part);
  CHECK(part.lane_mask == std::vector<float>{0, 1, 1, 1});
}

TEST_CASE("data: refusals name the file, the tensor and its shape", "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-refusals");
  const fs::path part = dir / "train";
  auto load = [&](const std::string& loss = "bce") { return refusal([&] { UserDataTask t(options(dir.string(), loss, 1)); }); };
  auto fresh = [&] {
    fs::remove_all(dir);
    write_npy_part(part);
  };
  const std::string inputs = (part / "inputs.npy").string();

  fresh();
  write_npy(part / "inputs.npy", "<f4", "(3, 4, 2, 3, 1)", std::vector<float>(72));
  CHECK_THAT(load(), Contains(part.string() + ": tensor inputs of shape [3, 4, 2, 3, 1]: expected [N, T, rows, cols]"));

  fresh();
  write_npy(part / "targets.npy", "<f8", "(2, 4, 1, 2)", std::vector<double>(16));
  CHECK_THAT(load(), Contains("tensor targets of shape [2, 4, 1, 2], but inputs has shape [3, 4, 2, 3]: N = 3 "
                              "sequences of T = 4 steps expected"));

  fresh();
  write_npy(part / "mask.npy", "|u1", "(3, 5)", std::vector<std::uint8_t>(15, 1));
  CHECK_THAT(load(), Contains("tensor mask of shape [3, 5], but inputs has shape [3, 4, 2, 3]"));

  fresh();
  write_npy(part / "inputs.npy", "<i4", "(3, 4, 2, 3)", std::vector<std::int32_t>(72));
  CHECK_THAT(load(), Contains("tensor inputs of shape [3, 4, 2, 3] has dtype i4: inputs are float32 or float64"));

  fresh();  // softmax_ce wants integer classes, not the float targets
  CHECK_THAT(load("softmax_ce"), Contains("tensor targets of shape [3, 4, 1, 2]: softmax_ce expects the classes [N, T] or [N, T, rows]"));
  write_npy(part / "targets.npy", "<f4", "(3, 4)", std::vector<float>(12));
  CHECK_THAT(load("softmax_ce"), Contains("tensor targets of shape [3, 4] has dtype f4: softmax_ce expects integer classes"));

  fresh();
  write_npy(part / "targets.npy", "<i8", "(3, 4)", std::vector<std::int64_t>(12, 7));
  CHECK_THAT(refusal([&] {
               UserDataOptions o = options(dir.string(), "softmax_ce", 1);
               o.classes = 5;
               UserDataTask t(o);
             }),
             Contains(part.string() + ": class 7 of sequence 0 at step 1 is not one of 0..4 (task.classes = 5)"));

  fresh();
  {
    std::vector<float> x(72);
    write_npy(part / "inputs.npy", "<f4", "(3, 4, 2, 3)", x.data(), x.size() * 4, true);
  }
  CHECK_THAT(load(), Contains(inputs + ": tensor inputs is in Fortran order"));

  fresh();
  write_npy(part / "inputs.npy", ">f4", "(3, 4, 2, 3)", std::vector<float>(72));
  CHECK_THAT(load(), Contains(inputs + ": tensor inputs is big-endian (>f4)"));

  fresh();
  write_npy(part / "inputs.npy", "<f4", "(3, 4, 2, 3)", std::vector<float>(71));  // one float short
  CHECK_THAT(load(), Contains(inputs + ": tensor inputs of shape [3, 4, 2, 3] and dtype f4 needs 288 bytes, but the "
                              "file holds 284 (truncated?)"));

  fresh();
  fs::remove(part / "targets.npy");
  CHECK_THAT(load(), Contains(part.string() + ": no tensor targets (" + (part / "targets.npy").string() + " is missing)"));

  fresh();
  write_npy(part / "mask.npy", "|u1", "(3, 4)", std::vector<std::uint8_t>{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1});
  CHECK_THAT(load(), Contains(part.string() + ": sequence 1 has no target (its mask is 0 at every step)"));

  // safetensors: a missing tensor, a truncated file, a wrong dtype.
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string st = (dir / "train.safetensors").string();
  TensorFile f = tensors();
  f.tensors.erase("targets");
  write_safetensors(st, f);
  CHECK_THAT(load(), Contains(st + ": no tensor targets (it holds: inputs, mask; inputs, targets and mask expected)"));
  write_safetensors(st, tensors());
  fs::resize_file(st, fs::file_size(st) - 4);
  CHECK_THAT(load(), Contains(st + ": tensor targets of shape [3, 4, 1, 2] lies at bytes") && Contains("(truncated?)"));

  CHECK_THAT(refusal([&] { UserDataTask t(options((dir / "nowhere").string())); }), Contains("nowhere is not a directory"));
  fs::remove(st);
  CHECK_THAT(load(), Contains("holds neither train.safetensors nor train/"));
  CHECK_THAT(refusal([&] { UserDataTask t(options(dir.string(), "hinge")); }), Contains("task.loss = hinge: choose bce, mse or softmax_ce"));
}

TEST_CASE("data: a NaN or an infinity in any part is refused at load, naming the file, the tensor and the index",
          "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-nonfinite");
  auto load = [&] { return refusal([&] { UserDataTask t(options(dir.string(), "bce", 1)); }); };
  auto fresh = [&] {
    fs::remove_all(dir);
    write_npy_part(dir / "train");
    write_safetensors((dir / "validation.safetensors").string(), tensors());
    write_npy_part(dir / "test");
  };
  fresh();
  CHECK_NOTHROW(UserDataTask{options(dir.string(), "bce", 1)});

  // The validation part's targets (safetensors, float32).
  TensorFile f = tensors();
  Tensor& y = f.tensors.at("targets");
  y.set(y.shape().offset(1, 2, 0, 1), std::nan(""));
  write_safetensors((dir / "validation.safetensors").string(), f);
  CHECK_THAT(load(), Contains((dir / "validation.safetensors").string() +
                              ": tensor targets of shape [3, 4, 1, 2] has NaN at index [1, 2, 0, 1]: only finite "
                              "values are read"));

  // The test part's inputs (.npy, float32): +inf and -inf.
  for (const float bad : {INFINITY, -INFINITY}) {
    fresh();
    std::vector<float> x(N * T * R * C, 0.5f);
    x[((2 * T + 3) * R + 1) * C + 0] = bad;  // [2, 3, 1, 0]
    write_npy(dir / "test" / "inputs.npy", "<f4", "(3, 4, 2, 3)", x);
    CHECK_THAT(load(), Contains((dir / "test" / "inputs.npy").string() + ": tensor inputs of shape [3, 4, 2, 3] has " +
                                (bad > 0 ? "inf" : "-inf") + " at index [2, 3, 1, 0]: only finite values are read"));
  }

  // The train part: a float64 target beyond float32's range (it would be read as inf), and a NaN in a mask.
  fresh();
  std::vector<double> y64(N * T * RO * CO, 1.0);
  y64[(0 * T + 1) * CO + 1] = 1e300;  // [0, 1, 0, 1]
  write_npy(dir / "train" / "targets.npy", "<f8", "(3, 4, 1, 2)", y64);
  CHECK_THAT(load(), Contains((dir / "train" / "targets.npy").string() + ": tensor targets of shape [3, 4, 1, 2] has "
                              "1e+300, beyond float32's range, at index [0, 1, 0, 1]"));
  fresh();
  std::vector<float> m(N * T, 1.0f);
  m[1 * T + 3] = std::nanf("");  // [1, 3]
  write_npy(dir / "train" / "mask.npy", "<f4", "(3, 4)", m);
  CHECK_THAT(load(), Contains((dir / "train" / "mask.npy").string() + ": tensor mask of shape [3, 4] has NaN at "
                              "index [1, 3]"));
}

TEST_CASE("data: a file larger than the memory available is refused with its size", "[tasks][user-data]") {
  const fs::path dir = testing::temp_dir("user-data-memory");
  write_safetensors((dir / "train.safetensors").string(), tensors());
  const auto size = fs::file_size(dir / "train.safetensors");
  // A cgroup that lets the process take 1000 bytes more (runtime/sysfs.hpp's MATMEM_SYSFS_ROOT).
  const fs::path sys = dir / "sys";
  fs::create_directories(sys / "fs" / "cgroup");
  std::ofstream(sys / "fs" / "cgroup" / "memory.max") << 5000;
  std::ofstream(sys / "fs" / "cgroup" / "memory.current") << 4000;
  ::setenv("MATMEM_SYSFS_ROOT", sys.c_str(), 1);
  const std::string message = refusal([&] { UserDataTask t(options(dir.string())); });
  ::unsetenv("MATMEM_SYSFS_ROOT");
  CHECK(available_memory() > 1e6);
  CHECK_THAT(message, Contains((dir / "train.safetensors").string() + ": " + std::to_string(size) + " bytes") &&
                          Contains("do not fit in the 0.0 MiB of memory available"));
}
