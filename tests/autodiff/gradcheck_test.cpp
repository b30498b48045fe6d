// gradcheck must catch wrong gradients: an op with a deliberately wrong backward fails, and inside a larger
// function the report names that op.
#include <catch2/catch.hpp>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/ops/ops.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// y = x², with a backward that forgets the factor 2 on the last element only (a "tail" bug).
template <class T>
struct BrokenSquare {
  static void forward(const OpCall<T>& c) {
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.y[k] = c.x[0][k] * c.x[0][k];
  }
  static void backward(const OpCall<T>& c) {
    const std::int64_t n = c.y_shape.numel();
    for (std::int64_t k = 0; k < n; ++k) c.grad_x[0][k] += (k == n - 1 ? 1 : 2) * c.x[0][k] * c.grad_y[k];
  }
};
constexpr OpDef kBroken = make_op<BrokenSquare>("broken_square");
Var broken_square(Var x) { return x.tape->apply(kBroken, {x}, x.shape()); }

Tensor ramp(Shape s) {
  Tensor t(DType::f64, s);
  for (std::int64_t k = 0; k < t.numel(); ++k) t.set(k, 0.3 + 0.1 * k);
  return t;
}
}  // namespace

TEST_CASE("gradcheck passes a correct composition", "[gradcheck]") {
  std::vector<GradcheckInput> in = {{"x", ramp(matrices(2, 3, 2))}};
  auto f = [](Tape&, std::span<const Var> x) { return tanh(hadamard(x[0], sigmoid(x[0]))); };
  GradcheckOptions opt;
  opt.full_jacobian = true;
  GradcheckReport r = gradcheck(f, in, nullptr, opt);
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == 12);
}

TEST_CASE("gradcheck fails a wrong backward and names the element", "[gradcheck]") {
  std::vector<GradcheckInput> in = {{"x", ramp(matrices(2, 3, 2))}};
  auto f = [](Tape&, std::span<const Var> x) { return broken_square(x[0]); };
  GradcheckReport r = gradcheck(f, in, nullptr);
  CHECK_FALSE(r.passed);
  REQUIRE(r.failures.size() == 1);
  CHECK(r.failures[0].tensor == "x");
  CHECK(r.failures[0].b == 1);  // the last flat element is (b=1, i=2, j=1)
  CHECK(r.failures[0].i == 2);
  CHECK(r.failures[0].j == 1);
  CHECK(r.failures[0].numerical == Approx(2 * r.failures[0].analytical).epsilon(1e-6));
}

TEST_CASE("inside a larger function the report names the faulty op", "[gradcheck]") {
  ParameterStore params(DType::f64);
  Parameter& u = params.add("net/U", parameter(3, 3));
  u.value = ramp(parameter(3, 3));
  std::vector<GradcheckInput> in = {{"x", ramp(matrices(2, 3, 2))}};
  Parameter* up = &u;
  auto f = [up](Tape& t, std::span<const Var> x) {
    Var v = tanh(x[0]);
    Var w = broken_square(scale(v, 0.5));
    return sigmoid(add(w, sum(t.param(*up))));
  };
  GradcheckReport r = gradcheck(f, in, &params);
  CHECK_FALSE(r.passed);
  CHECK_THAT(r.failing_op, Contains("broken_square"));
  CHECK_THAT(r.str(), Contains("FAILED") && Contains("broken_square"));
  // Per tensor: x passes through broken_square and fails, U does not and passes.
  REQUIRE(r.tensors.size() == 2);
  CHECK(r.tensors[0].name == "x");
  CHECK(r.tensors[0].elements_checked == 12);
  CHECK(r.tensors[0].failed > 0);
  CHECK(r.tensors[0].max_abs_error == r.max_abs_error);
  CHECK(r.tensors[1].name == "net/U");
  CHECK(r.tensors[1].shape == parameter(3, 3));
  CHECK(r.tensors[1].elements_checked == 9);
  CHECK(r.tensors[1].failed == 0);
  CHECK(r.tensors[1].max_abs_error < 1e-8);
}

TEST_CASE("gradcheck checks parameters too", "[gradcheck]") {
  ParameterStore params(DType::f64);
  Parameter& u = params.add("net/U", parameter(3, 4));
  u.value = ramp(parameter(3, 4));
  Parameter& v = params.add("net/V", parameter(2, 2));
  v.value = ramp(parameter(2, 2));
  std::vector<GradcheckInput> in = {{"x", ramp(matrices(2, 3, 2))}};
  auto f = [&](Tape& t, std::span<const Var> x) { return tanh(bilinear(x[0], t.param(u), t.param(v))); };
  GradcheckReport r = gradcheck(f, in, &params);
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == 12 + 12 + 4);
}
