// Shared by the op tests: a float64 batch filled element by element in logical order, and an op sample run
// once in a given precision (its forward value and every input's gradient for a fixed random upstream
// gradient), and two such runs compared element by element.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "matmem/ops/registry.hpp"

namespace matmem::testing {

// A float64 tensor of shape s whose logical element (b, i, j) is f(b, i, j), whatever the layout.
template <class F>
Tensor logical(Shape s, F f) {
  Tensor x(DType::f64, s);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < s.rows; ++i)
      for (std::int64_t j = 0; j < s.cols; ++j) x.set(s.offset(b, 0, i, j), f(b, i, j));
  return x;
}

// {y, grad of input 0, grad of input 1, …}; the upstream gradient is normal noise drawn from `seed`.
// Runs a sample in dtype, the output's gradient grad_of(the output's shape) (flat, any dtype): the output and
// every input's gradient.
template <class GradOf>
inline std::vector<Tensor> run_grad(DType dtype, const OpSample& sample, GradOf&& grad_of) {
  std::vector<Tensor> inputs;  // declared first: they outlive the tape that refers to them
  for (const auto& in : sample.inputs) inputs.push_back(in.value.to(dtype));
  Tape tape(dtype);
  std::vector<Var> vars;
  for (const Tensor& t : inputs) vars.push_back(tape.input(t, true));
  Var y = sample.apply(tape, vars);
  tape.backward(y, grad_of(y.shape()).to(dtype));
  std::vector<Tensor> out = {y.value_copy()};
  for (const Var& v : vars) out.push_back(v.grad_copy());
  return out;
}

// run_grad with the output's gradient given.
inline std::vector<Tensor> run_with(DType dtype, const OpSample& sample, const Tensor& grad_y) {
  return run_grad(dtype, sample, [&](const Shape&) { return grad_y; });
}

// run_grad with an output gradient of standard normal values drawn from seed.
inline std::vector<Tensor> run_in(DType dtype, const OpSample& sample, std::uint64_t seed) {
  return run_grad(dtype, sample, [&](const Shape& shape) {
    Rng rng(seed);
    Tensor g(DType::f64, shape);
    for (std::int64_t k = 0; k < g.numel(); ++k) g.set(k, rng.normal());
    return g;
  });
}

// gradcheck of a sample in float64 (with the full Jacobian when `full`), then of it applied twice (every
// gradient added into one a later consumer wrote); `what` names the case.
inline void check_gradients(OpSample sample, bool full, const std::string& what) {
  GradcheckOptions opt;
  opt.full_jacobian = full;
  GradcheckReport once = gradcheck(sample.apply, sample.inputs, nullptr, opt);
  INFO(what << ": " << once.str());
  CHECK(once.passed);
  GradcheckReport twice = gradcheck(applied_twice(sample).apply, sample.inputs, nullptr, opt);
  INFO(what << ", applied twice: " << twice.str());
  CHECK(twice.passed);
}

// Every element of each tensor of b within tol · (the largest |a| of that tensor) of a's, else a failed CHECK
// naming the tensor (0: the output, k: the gradient of input k − 1) and the element; `what` names the case.
inline void check_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol, const std::string& what) {
  REQUIRE(a.size() == b.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    REQUIRE(a[t].shape() == b[t].shape());
    double scale = 0;
    for (std::int64_t k = 0; k < a[t].numel(); ++k) scale = std::max(scale, std::abs(a[t].get(k)));
    std::int64_t bad = 0, first = -1;
    for (std::int64_t k = 0; k < a[t].numel(); ++k)
      if (!(std::abs(a[t].get(k) - b[t].get(k)) <= tol * scale)) {
        if (bad++ == 0) first = k;
      }
    INFO(what << ": " << (t == 0 ? std::string("output") : "gradient of input " + std::to_string(t - 1)) << ", "
              << bad << " of " << a[t].numel() << " elements differ, the first " << first << ": "
              << (first >= 0 ? a[t].get(first) : 0.0) << " against " << (first >= 0 ? b[t].get(first) : 0.0));
    CHECK(bad == 0);
  }
}

// A fused op against the separate ops it replaces, and against itself with its saved buffer recomputed: every
// element of each tensor of `fused` equal to `separate`'s within 1e-12 (1e-13 absolute) and to `recomputed`'s
// exactly; where(k) names tensor k.
template <class Where>
void check_fused(const std::vector<Tensor>& fused, const std::vector<Tensor>& separate,
                 const std::vector<Tensor>& recomputed, Where&& where) {
  REQUIRE(fused.size() == separate.size());
  REQUIRE(recomputed.size() == fused.size());
  for (std::size_t k = 0; k < fused.size(); ++k)
    for (std::int64_t e = 0; e < fused[k].numel(); ++e) {
      INFO(where(k) << ", element " << e);
      CHECK(fused[k].get(e) == Approx(separate[k].get(e)).epsilon(1e-12).margin(1e-13));
      CHECK(recomputed[k].get(e) == fused[k].get(e));
    }
}

}  // namespace matmem::testing
