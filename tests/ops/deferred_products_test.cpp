// Deferred products (autodiff/op.hpp, GradientDeferral): at batch 1 a weight used at every time step has its
// gradient formed once a backward pass, Σ_t a_tᵀ b_t as one GEMM over the steps' rows, instead of an outer
// product added at each step. Against the per-step form (Tape::set_deferred_products(false)) on a recurrence
// of 1, 3 and 37 steps through mat (a controller's map) and stacked_projections (a vector NTM's heads): equal
// by value in float64, and gradchecked; the weights' products are seen to be deferred.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/random.hpp"

using namespace matmem;

namespace {
constexpr std::int64_t kIn = 3, kState = 8, kHeads = 2, kHeadCols = 5;

// Inputs: x_1..x_T [1,1,3], then W [3,8], V [8,8], u_x, u_h [1,1], bias [1,8], the heads' V_1, V_2 [8,5],
// their u_k [1,1] and B_k [1,5]. h_t = tanh(mat(x_t W u_x + h_{t−1} V u_h + bias)), h_0 = 0 (only x at t = 1);
// the heads read every h_t: y_t,k = u_k (h_t V_s)_k + B_k (stacked_projections); the output is
// Σ_t Σ_k sum(y_t,k ⊙ y_t,k) + h_T's sum of squares.
std::vector<GradcheckInput> recurrence_inputs(int steps) {
  Rng rng(11);
  std::vector<GradcheckInput> in;
  for (int t = 0; t < steps; ++t) in.push_back({"x" + std::to_string(t + 1), random_tensor(rng, matrices(1, 1, kIn))});
  in.push_back({"W", random_tensor(rng, parameter(kIn, kState), -0.5, 0.5)});
  in.push_back({"V", random_tensor(rng, parameter(kState, kState), -0.4, 0.4)});
  in.push_back({"u_x", random_tensor(rng, parameter(1, 1))});
  in.push_back({"u_h", random_tensor(rng, parameter(1, 1))});
  in.push_back({"bias", random_tensor(rng, parameter(1, kState), -0.1, 0.1)});
  for (int k = 0; k < kHeads; ++k) {
    in.push_back({"V_head" + std::to_string(k + 1), random_tensor(rng, parameter(kState, kHeadCols), -0.5, 0.5)});
    in.push_back({"u_head" + std::to_string(k + 1), random_tensor(rng, parameter(1, 1))});
    in.push_back({"B_head" + std::to_string(k + 1), random_tensor(rng, parameter(1, kHeadCols), -0.1, 0.1)});
  }
  return in;
}

GradcheckFn recurrence(int steps, bool deferred) {
  return [steps, deferred](Tape& tape, std::span<const Var> x) {
    tape.set_deferred_products(deferred);
    const Var *w = &x[steps], *v = w + 1, *ux = w + 2, *uh = w + 3, *bias = w + 4, *heads = w + 5;
    const Var v_stacked = stack_columns(std::vector<Var>{heads[0], heads[3]});
    const std::vector<Var> us{heads[1], heads[4]}, bs{heads[2], heads[5]};
    Var h, total;
    for (int t = 0; t < steps; ++t) {
      std::vector<MatTerm> terms{{x[t], *ux, *w}};
      if (t > 0) terms.push_back({h, *uh, *v});
      h = tanh(mat(terms, *bias));
      std::vector<Var> y(kHeads);
      stacked_projections(h, v_stacked, us, bs, y);
      for (const Var& yk : y) total = total.valid() ? add(total, sum(hadamard(yk, yk))) : sum(hadamard(yk, yk));
    }
    return add(total, sum(hadamard(h, h)));
  };
}

// Every gradient of one backward pass, deferred or per step, and how many products the tape deferred.
std::pair<std::vector<Tensor>, std::int64_t> gradients(int steps, bool deferred) {
  std::vector<GradcheckInput> in = recurrence_inputs(steps);
  Tape tape(DType::f64);
  std::vector<Var> vars;
  for (const GradcheckInput& i : in) vars.push_back(tape.input(i.value, true));
  const Var y = recurrence(steps, deferred)(tape, vars);
  tape.backward(y);
  std::vector<Tensor> grads;
  for (const Var& v : vars) grads.push_back(v.grad_copy());
  return {grads, tape.deferred_products()};
}
}  // namespace

TEST_CASE("deferred products: the weights' gradients equal the per-step form's over 1, 3 and 37 steps",
          "[autodiff][deferred]") {
  for (int steps : {1, 3, 37}) {
    INFO(steps << " steps");
    const auto [deferred, count] = gradients(steps, true);
    const auto [per_step, none] = gradients(steps, false);
    CHECK(none == 0);
    // At every step: V's term (from the second step), W's, and V_s's (the heads').
    CHECK(count == 3 * steps - 1);
    const std::vector<GradcheckInput> names = recurrence_inputs(steps);
    REQUIRE(deferred.size() == per_step.size());
    for (std::size_t k = 0; k < deferred.size(); ++k)
      for (std::int64_t e = 0; e < deferred[k].numel(); ++e) {
        INFO(names[k].name << " element " << e);
        CHECK(deferred[k].get(e) == Approx(per_step[k].get(e)).epsilon(1e-12).margin(1e-14));
      }
  }
}

TEST_CASE("deferred products: a recurrence of 1, 3 and 37 steps through mat and stacked_projections passes gradcheck",
          "[autodiff][deferred][gradcheck]") {
  for (int steps : {1, 3, 37}) {
    std::vector<GradcheckInput> in = recurrence_inputs(steps);
    const GradcheckReport r = gradcheck(recurrence(steps, true), in, nullptr);
    INFO(steps << " steps\n" << r.str());
    CHECK(r.passed);
  }
}
