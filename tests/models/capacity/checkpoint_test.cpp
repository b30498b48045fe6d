// Reading U, V (and W) of a MatRNN layer from a checkpoint for the capacity analysis.
#include <catch2/catch.hpp>

#include <filesystem>

#include "matmem/models/capacity/checkpoint.hpp"
#include "matmem/models/capacity/generators.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"

using namespace matmem;
using namespace matmem::capacity;

namespace {
matmem::Tensor values(DType dtype, Shape shape, std::initializer_list<double> v) {
  matmem::Tensor t(dtype, shape);
  std::int64_t k = 0;
  for (double x : v) t.set(k++, x);
  return t;
}
std::string write(const std::string& file, TensorFile f) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  write_safetensors(path, f);
  return path;
}
// 3×3 U stored as float32 (values exactly representable), 2×2 V as float64, W 3×2.
TensorFile layer() {
  TensorFile f;
  f.tensors.emplace("matrnn/l1/h/U", values(DType::f32, parameter(3, 3), {0.5, -0.25, 0.125, 0.0, 0.375, -0.5, 0.0625, 0.25, -0.125}));
  f.tensors.emplace("matrnn/l1/h/V", values(DType::f64, parameter(2, 2), {0.3, -0.1, 0.2, 0.45}));
  f.tensors.emplace("matrnn/l1/x/U", values(DType::f32, parameter(3, 3), {1, 0, 0, 0, 1, 0, 0, 0, 1}));
  f.tensors.emplace("probe/W", values(DType::f64, parameter(3, 2), {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}));
  return f;
}
}  // namespace

TEST_CASE("checkpoint: U, V of a MatRNN layer, W drawn or named", "[capacity][checkpoint]") {
  const std::string path = write("matmem_capacity_ckpt1.safetensors", layer());
  Rng rng(3);
  const MatrixNet net = load_matrix_net(CheckpointSource{path, "matrnn/l1", ""}, Noise{1, 2}, rng);
  CHECK(net.u.rows == 3);
  CHECK(net.u(0, 1) == -0.25);
  CHECK(net.v.rows == 2);
  CHECK(net.v(0, 1) == -0.1);
  CHECK(net.w.rows == 3);
  CHECK(net.w.cols == 2);
  CHECK(frobenius_squared(net.w) == Approx(1.0).epsilon(1e-14));
  CHECK(net.noise.eps2 == 2);

  const MatrixNet named = load_matrix_net(CheckpointSource{path, "matrnn/l1", "probe/W"}, Noise{}, rng);
  CHECK(named.w(2, 1) == 0.6);
  CHECK(fmc_exact(net, 3).total > 0);  // the checkpoint's network goes through the analysis like a generated one

  CHECK_THROWS_WITH(load_matrix_net(CheckpointSource{path, "matrnn/l2", ""}, Noise{}, rng),
                    Catch::Contains("matrnn/l1"));  // names the layers that exist
  CHECK_THROWS_WITH(load_matrix_net(CheckpointSource{path, "matrnn/l1", "matrnn/l1/x/U"}, Noise{}, rng),  // W 3×3
                    Catch::Contains("with W 3×3 needs U 3×3 and V 3×3, got U 3×3 and V 2×2"));
  std::filesystem::remove(path);
}

TEST_CASE("checkpoint: the trainer's layout, parameters under param/, found from the run directory", "[capacity][checkpoint]") {
  const auto dir = std::filesystem::temp_directory_path() / "matmem_capacity_run";
  std::filesystem::create_directories(dir);
  TensorFile f;
  f.tensors.emplace("param/ntm/ctrl/l1/h/U", values(DType::f32, parameter(2, 2), {0.5, 0.0, 0.25, -0.5}));
  f.tensors.emplace("param/ntm/ctrl/l1/h/V", values(DType::f32, parameter(3, 3), {0.5, 0, 0, 0, 0.5, 0, 0, 0, 0.5}));
  f.tensors.emplace("optim/ntm/ctrl/l1/h/U/square_avg", values(DType::f32, parameter(2, 2), {1, 1, 1, 1}));
  write_safetensors((dir / "checkpoint.safetensors").string(), f);
  Rng rng(4);
  const MatrixNet net = load_matrix_net(CheckpointSource{dir.string(), "ntm/ctrl/l1", ""}, Noise{}, rng);
  CHECK(net.u(1, 0) == 0.25);
  CHECK(net.w.rows == 2);
  CHECK(net.w.cols == 3);
  CHECK_THROWS_WITH(load_matrix_net(CheckpointSource{dir.string(), "ntm/ctrl/l2", ""}, Noise{}, rng),
                    Catch::Contains("ntm/ctrl/l1"));
  std::filesystem::remove_all(dir);
}
