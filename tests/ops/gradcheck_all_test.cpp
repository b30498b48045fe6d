// Every registered op through gradcheck in float64, at sizes below a SIMD width (scalar code only) and
// past several widths without being a multiple of one (vector bodies and their tails).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "ops/registry.hpp"

using namespace matmem;

namespace {
void check_op(const OpEntry& entry, SampleSize size) {
  GradcheckReport report = gradcheck_op(entry, size);
  INFO(entry.name << ": " << report.str());
  CHECK(report.passed);
  CHECK(report.elements_checked > 0);
}
}  // namespace

TEST_CASE("the registry holds every op of the spec", "[ops]") {
  for (const char* name : {"bilinear", "mat", "add", "sub", "hadamard", "scale", "sigmoid", "tanh", "relu", "softplus", "row",
                           "exp", "softmax", "sum", "cosine_similarity", "circular_shift", "sharpen", "memory_read",
                           "memory_write", "bce_with_logits", "mse", "softmax_cross_entropy", "ntm_addressing"}) {
    INFO(name);
    CHECK(find_op(name) != nullptr);
  }
}

TEST_CASE("every op passes gradcheck with the full Jacobian at small sizes", "[ops][gradcheck]") {
  for (const OpEntry& entry : op_registry()) {
    SECTION(entry.name) { check_op(entry, SampleSize::small); }
  }
}

TEST_CASE("every op passes gradcheck at sizes that vectorise and have tails", "[ops][gradcheck]") {
  for (const OpEntry& entry : op_registry()) {
    SECTION(entry.name) { check_op(entry, SampleSize::large); }
  }
}

namespace {
// Forward value and every input gradient (for a fixed random upstream gradient) in the given precision.
std::vector<Tensor> run_in(DType dtype, const OpSample& sample, std::uint64_t seed) {
  Tape tape(dtype);
  std::vector<Tensor> inputs;
  for (const auto& in : sample.inputs) inputs.push_back(in.value.to(dtype));
  std::vector<Var> vars;
  for (const Tensor& t : inputs) vars.push_back(tape.input(t, true));
  Var y = sample.apply(tape, vars);
  Rng rng(seed);
  Tensor seed_grad(dtype, y.shape());
  for (std::int64_t k = 0; k < seed_grad.numel(); ++k) seed_grad.set(k, rng.normal());
  tape.backward(y, seed_grad);
  std::vector<Tensor> out = {y.value_copy()};
  for (const Var& v : vars) out.push_back(v.grad_copy());
  return out;
}
}  // namespace

TEST_CASE("float32 kernels agree with float64 on the same inputs in vector bodies and tails", "[ops][precision]") {
  for (const OpEntry& entry : op_registry()) {
    SECTION(entry.name) {
      Rng rng(77);
      OpSample sample = entry.sample(rng, SampleSize::large);
      const std::vector<Tensor> f = run_in(DType::f32, sample, 5), d = run_in(DType::f64, sample, 5);
      REQUIRE(f.size() == d.size());
      for (std::size_t t = 0; t < f.size(); ++t) {
        double scale = 0;
        for (std::int64_t k = 0; k < d[t].numel(); ++k) scale = std::max(scale, std::abs(d[t].get(k)));
        for (std::int64_t k = 0; k < d[t].numel(); ++k) {
          INFO(entry.name << (t == 0 ? " output" : " gradient of input ") << (t == 0 ? "" : std::to_string(t - 1))
                          << " element " << k << ": float32 " << f[t].get(k) << ", float64 " << d[t].get(k));
          REQUIRE(std::abs(f[t].get(k) - d[t].get(k)) <= 1e-4 * scale + 1e-5 * std::abs(d[t].get(k)) + 1e-6);
        }
      }
    }
  }
}
