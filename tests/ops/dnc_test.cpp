// The DNC's memory-management ops (ops/dnc.hpp): values and gradients against small cases worked by hand
// (N = 3 or 4, the working in the comments; a batch of 2 so that the layouts' sample offsets count), the
// allocation's ties and ε, the link matrix's zero diagonal and update order, the stop-gradient of the usage,
// and the refusals. Their gradients against central differences: every op in gradcheck_all_test.cpp.
#include <catch2/catch.hpp>

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "matmem/ops/dnc.hpp"
#include "matmem/ops/fast_weight_matrix.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/transpose.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;
using Catch::Matchers::Contains;
using matmem::testing::check_close;
using matmem::testing::logical;
using matmem::testing::run_in;

namespace {
// A float64 weighting [B,N] (or per-sample scalars, N = 1) from its values sample by sample.
Tensor weights(std::int64_t B, std::int64_t N, std::initializer_list<double> v) {
  REQUIRE(std::int64_t(v.size()) == B * N);
  Tensor t(DType::f64, weighting(B, N));
  std::int64_t k = 0;
  for (double x : v) t.set(weighting(B, N).offset(k / N, 0, 0, k % N), x), ++k;
  return t;
}
// A float64 batch of N×N matrices from its values, sample by sample, row by row.
Tensor square(std::int64_t B, std::int64_t N, std::initializer_list<double> v) {
  REQUIRE(std::int64_t(v.size()) == B * N * N);
  const std::vector<double> x(v);
  return logical(matrices(B, N, N), [&](auto b, auto i, auto j) { return x[std::size_t((b * N + i) * N + j)]; });
}

// {y, grad of input 0, grad of input 1, …} of y = f(x) in float64 for the upstream gradient `seed`
// (a tensor of y's shape), every input needing a gradient.
std::vector<Tensor> forward_backward(const std::vector<Tensor>& inputs, const std::function<Var(std::span<const Var>)>& f,
                                     const Tensor& seed) {
  Tape tape(DType::f64);
  std::vector<Var> x;
  for (const Tensor& t : inputs) x.push_back(tape.input(t, true));
  Var y = f(x);
  REQUIRE(y.shape() == seed.shape());
  tape.backward(y, seed);
  std::vector<Tensor> out = {y.value_copy()};
  for (const Var& v : x) out.push_back(v.grad_copy());
  return out;
}

// Every element of t (in logical order, weightings as [B,1,N]) within tol of `expected`.
void check_values(const Tensor& t, std::initializer_list<double> expected, double tol, const std::string& what) {
  const Shape& s = t.shape();
  REQUIRE(s.numel() == std::int64_t(expected.size()));
  std::int64_t k = 0;
  for (double e : expected) {
    const std::int64_t b = k / (s.rows * s.cols), i = k / s.cols % s.rows, j = k % s.cols;
    INFO(what << " element (" << b << ", " << i << ", " << j << ")");
    CHECK(t.at(b, i, j) == Approx(e).margin(tol));
    ++k;
  }
}
}  // namespace

TEST_CASE("dnc_usage is (u + w − u w) ψ with ψ the free gates' retention, by hand", "[ops][dnc]") {
  // Sample 0, R = 2: u = (0.5, 0.2, 0), w^w = (0, 0.5, 1), f_1 = 0.5, w^r_1 = (1, 0, 0.2), f_2 = 1, w^r_2 = (0, 0.5, 0.5).
  //   v = u + w − u w = (0.5, 0.6, 1);  q_1 = 1 − f_1 w^r_1 = (0.5, 1, 0.9), q_2 = (1, 0.5, 0.5);  ψ = q_1 q_2 = (0.5, 0.5, 0.45)
  //   u_t = v ψ = (0.25, 0.3, 0.45)
  // Sample 1: u = 0, w^w = (1, 0, 0), f_1 = 1, w^r_1 = (1, 0, 0), f_2 = 0, w^r_2 = 0: v = (1, 0, 0), ψ = (0, 1, 1),
  //   u_t = 0 (slot 0 written, then freed whole: q_1 = 0 there, which a gradient by division would turn to 0/0).
  const std::vector<Tensor> x = {weights(2, 3, {0.5, 0.2, 0, 0, 0, 0}), weights(2, 3, {0, 0.5, 1, 1, 0, 0}),
                                 weights(2, 1, {0.5, 1}), weights(2, 3, {1, 0, 0.2, 1, 0, 0}),
                                 weights(2, 1, {1, 0}), weights(2, 3, {0, 0.5, 0.5, 0, 0, 0})};
  auto f = [](std::span<const Var> v) {
    const Var gates[] = {v[2], v[4]}, reads[] = {v[3], v[5]};
    return dnc_usage(v[0], v[1], gates, reads);
  };
  // Upstream g = (1, 2, 3) and (1, 1, 1). With Q_i = Π_{k≠i} q_k:
  //   grad_u = g ψ (1 − w^w) = (0.5, 0.5, 0) | (0, 1, 1)
  //   grad_w^w = 0 (the stop-gradient; without it g ψ (1 − u) = (0.25, 0.8, 1.35) | (0, 1, 1))
  //   grad_f_1 = Σ_n −g v w^r_1 Q_1 = −1·0.5·1·1 − 3·1·0.2·0.5 = −0.8 | −1·1·1·1 = −1
  //   grad_f_2 = Σ_n −g v w^r_2 Q_2 = −2·0.6·0.5·1 − 3·1·0.5·0.9 = −1.95 | 0
  //   grad_w^r_1 = −g v f_1 Q_1 = (−0.25, −0.3, −0.75) | (−1, 0, 0)
  //   grad_w^r_2 = −g v f_2 Q_2 = (−0.25, −1.2, −2.7) | (0, 0, 0)
  const std::vector<Tensor> out = forward_backward(x, f, weights(2, 3, {1, 2, 3, 1, 1, 1}));
  REQUIRE(out[0].shape() == weighting(2, 3));
  check_values(out[0], {0.25, 0.3, 0.45, 0, 0, 0}, 1e-15, "u_t");
  check_values(out[1], {0.5, 0.5, 0, 0, 1, 1}, 1e-15, "grad u_prev");
  check_values(out[2], {0, 0, 0, 0, 0, 0}, 0, "grad w_write_prev (stop-gradient)");
  check_values(out[3], {-0.8, -1}, 1e-15, "grad f_1");
  check_values(out[4], {-0.25, -0.3, -0.75, -1, 0, 0}, 1e-15, "grad w_read_1");
  check_values(out[5], {-1.95, 0}, 1e-15, "grad f_2");
  check_values(out[6], {-0.25, -1.2, -2.7, 0, 0, 0}, 1e-15, "grad w_read_2");
}

TEST_CASE("dnc_usage's registry sample passes no gradient to the past write weighting", "[ops][dnc]") {
  Rng rng(3);
  const OpSample sample = find_op("dnc_usage")->sample(rng, SampleSize::large);
  REQUIRE(sample.inputs[1].name == "w_write_prev");
  CHECK_FALSE(sample.inputs[1].differentiable);
  const std::vector<Tensor> out = run_in(DType::f64, sample, 5);
  for (std::int64_t k = 0; k < out[2].numel(); ++k) CHECK(out[2].get(k) == 0.0);
}

TEST_CASE("dnc_allocation sorts by usage and multiplies the lower usages, by hand", "[ops][dnc]") {
  // Sample 0: u = (0.4, 0.1, 0.8, 0.3): φ = (1, 3, 0, 2), sorted s = (0.1, 0.3, 0.4, 0.8), P_j = Π_{k<j} s_k = (1, 0.1, 0.03, 0.012)
  //   a[1] = 0.9, a[3] = 0.7·0.1 = 0.07, a[0] = 0.6·0.03 = 0.018, a[2] = 0.2·0.012 = 0.0024
  // Sample 1: u = (0.5, 0.2, 0.5, 0.2), two ties, each to the lower slot first: φ = (1, 3, 0, 2),
  //   a[1] = 0.8, a[3] = 0.8·0.2 = 0.16, a[0] = 0.5·0.04 = 0.02, a[2] = 0.5·0.02 = 0.01
  //   (ties the other way round, φ = (3, 1, 2, 0), would give a = (0.01, 0.16, 0.02, 0.8))
  // û = ε + (1 − ε) u moves every value by less than 1e-5 (ε = 1e-6): the tolerance.
  const std::vector<Tensor> x = {weights(2, 4, {0.4, 0.1, 0.8, 0.3, 0.5, 0.2, 0.5, 0.2})};
  // Upstream g = (1, 2, 3, 4) in sample 0, so g along φ is (2, 4, 1, 3); T_k = Σ_{j>k} g_j (1 − s_j) Π_{k<i<j} s_i:
  //   T_3 = 0, T_2 = 3·0.2 = 0.6, T_1 = 1·0.6 + 0.4·0.6 = 0.84, T_0 = 4·0.7 + 0.3·0.84 = 3.052
  //   ∂s_k = P_k (T_k − g_k) = 1.052, −0.316, −0.012, −0.036 -> grad_u = (−0.012, 1.052, −0.036, −0.316)
  //   (∂s_0 directly: −2 + 4·0.7 + 1·0.6·0.3 + 3·0.2·0.3·0.4 = 1.052)
  // Sample 1, g = (0, 0, 0, 1) (only a[3]): a[3] = (1 − s_1) s_0, s_0 = u[1], s_1 = u[3] -> grad_u = (0, 0.8, 0, −0.2)
  const std::vector<Tensor> out =
      forward_backward(x, [](std::span<const Var> v) { return dnc_allocation(v[0]); }, weights(2, 4, {1, 2, 3, 4, 0, 0, 0, 1}));
  check_values(out[0], {0.018, 0.9, 0.0024, 0.07, 0.02, 0.8, 0.01, 0.16}, 1e-5, "a");
  check_values(out[1], {-0.012, 1.052, -0.036, -0.316, 0, 0.8, 0, -0.2}, 1e-5, "grad u");
}

TEST_CASE("dnc_allocation shifts usages by ε = 1e-6 as DeepMind's code", "[ops][dnc]") {
  // u = 0: û = ε everywhere, ties throughout, φ = (0, 1, 2): a = (1 − ε, (1 − ε) ε, (1 − ε) ε²). u = 1: û = 1 (to rounding), a = 0.
  const std::vector<Tensor> x = {weights(2, 3, {0, 0, 0, 1, 1, 1})};
  const std::vector<Tensor> out =
      forward_backward(x, [](std::span<const Var> v) { return dnc_allocation(v[0]); }, weights(2, 3, {1, 1, 1, 1, 1, 1}));
  const double e = 1e-6;
  CHECK(out[0].at(0, 0, 0) == Approx(1 - e).epsilon(1e-14));
  CHECK(out[0].at(0, 0, 1) == Approx((1 - e) * e).epsilon(1e-12));
  CHECK(out[0].at(0, 0, 2) == Approx((1 - e) * e * e).epsilon(1e-12));
  for (std::int64_t n = 0; n < 3; ++n) CHECK(out[0].at(1, 0, n) == Approx(0.0).margin(1e-15));
}

TEST_CASE("dnc_write_weighting is g^w (g^a a + (1 − g^a) c), by hand", "[ops][dnc]") {
  // g^w = 0.5, g^a = 0.8, a = (0.6, 0.4, 0, 0), c = (0.1, 0.2, 0.3, 0.4):
  //   0.5 (0.8 a + 0.2 c) = 0.5 (0.48 + 0.02, 0.32 + 0.04, 0.06, 0.08) = (0.25, 0.18, 0.03, 0.04)
  // Sample 1: g^w = 1, g^a = 0: the content weighting c = (0.25, 0.25, 0.5, 0).
  const std::vector<Tensor> x = {weights(2, 1, {0.5, 1}), weights(2, 1, {0.8, 0}),
                                 weights(2, 4, {0.6, 0.4, 0, 0, 1, 0, 0, 0}), weights(2, 4, {0.1, 0.2, 0.3, 0.4, 0.25, 0.25, 0.5, 0})};
  // Upstream g = 1: grad_g^w = Σ (g^a a + (1 − g^a) c) = 0.5 + 0.36 + 0.06 + 0.08 = 1 | 1,
  //   grad_g^a = g^w Σ (a − c) = 0.5 (1 − 1) = 0 | 1·(1 − 1) = 0, grad_a = g^w g^a = 0.4 | 0, grad_c = g^w (1 − g^a) = 0.1 | 1
  const std::vector<Tensor> out = forward_backward(
      x, [](std::span<const Var> v) { return dnc_write_weighting(v[0], v[1], v[2], v[3]); }, weights(2, 4, {1, 1, 1, 1, 1, 1, 1, 1}));
  check_values(out[0], {0.25, 0.18, 0.03, 0.04, 0.25, 0.25, 0.5, 0}, 1e-15, "w^w");
  check_values(out[1], {1, 1}, 1e-15, "grad g^w");
  check_values(out[2], {0, 0}, 1e-15, "grad g^a");
  check_values(out[3], {0.4, 0.4, 0.4, 0.4, 0, 0, 0, 0}, 1e-15, "grad a");
  check_values(out[4], {0.1, 0.1, 0.1, 0.1, 1, 1, 1, 1}, 1e-15, "grad c");
}

TEST_CASE("dnc_link and dnc_precedence after one write, by hand, with a zero diagonal", "[ops][dnc]") {
  // Sample 0: L = [0.9 0.2 0.4; 0.1 0.9 0.3; 0.5 0.6 0.9] (a diagonal of 0.9, which the op must ignore),
  //   p = (0.2, 0.3, 0.1), w = (0.5, 0.25, 0). L_t[i,j] = (1 − w_i − w_j) L[i,j] + w_i p_j:
  //   [0,1] = 0.25·0.2 + 0.5·0.3 = 0.2    [0,2] = 0.5·0.4 + 0.5·0.1 = 0.25
  //   [1,0] = 0.25·0.1 + 0.25·0.2 = 0.075 [1,2] = 0.75·0.3 + 0.25·0.1 = 0.25
  //   [2,0] = 0.5·0.5 = 0.25              [2,1] = 0.75·0.6 = 0.45
  //   p_t = (1 − 0.75) p + w = (0.55, 0.325, 0.025)
  // Sample 1: L = 0, p = (0, 0, 1), w = (0, 1, 0): L_t[1,2] = 1 (slot 1 written after slot 2), p_t = (0, 1, 0).
  const std::vector<Tensor> x = {square(2, 3, {0.9, 0.2, 0.4, 0.1, 0.9, 0.3, 0.5, 0.6, 0.9, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
                                 weights(2, 3, {0.2, 0.3, 0.1, 0, 0, 1}), weights(2, 3, {0.5, 0.25, 0, 0, 1, 0})};
  // Upstream g = 1 everywhere: grad_L[i,j] = 1 − w_i − w_j off the diagonal, 0 on it (the diagonal is never read):
  //   sample 0: [0 0.25 0.5; 0.25 0 0.75; 0.5 0.75 0], sample 1: [0 0 1; 0 0 0; 1 0 0]
  const std::vector<Tensor> link = forward_backward(
      x, [](std::span<const Var> v) { return dnc_link(v[0], v[1], v[2]); }, logical(matrices(2, 3, 3), [](auto...) { return 1.0; }));
  check_values(link[0], {0, 0.2, 0.25, 0.075, 0, 0.25, 0.25, 0.45, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, 1e-15, "L_t");
  check_values(link[1], {0, 0.25, 0.5, 0.25, 0, 0.75, 0.5, 0.75, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0}, 1e-15, "grad L_prev");
  SECTION("the diagonal is zero whatever the write") {
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t i = 0; i < 3; ++i) CHECK(link[0].at(b, i, i) == 0.0);
  }
  const std::vector<Tensor> precedence =
      forward_backward({x[1], x[2]}, [](std::span<const Var> v) { return dnc_precedence(v[0], v[1]); }, weights(2, 3, {1, 2, 3, 1, 1, 1}));
  check_values(precedence[0], {0.55, 0.325, 0.025, 0, 1, 0}, 1e-15, "p_t");
  // Upstream g = (1, 2, 3) | (1, 1, 1): grad_p = g (1 − Σw) = (0.25, 0.5, 0.75) | 0,
  //   grad_w = g − ⟨g, p⟩ = g − 1.1 = (−0.1, 0.9, 1.9) | g − 1 = 0
  check_values(precedence[1], {0.25, 0.5, 0.75, 0, 0, 0}, 1e-15, "grad p_prev");
  check_values(precedence[2], {-0.1, 0.9, 1.9, 0, 0, 0}, 1e-15, "grad w");
}

TEST_CASE("the links of two writes point from the later slot to the earlier, and the directional weightings follow them",
          "[ops][dnc]") {
  // From L_0 = 0, p_0 = 0: write slot 0 (w_1 = (1, 0, 0)): L_1 = 0 (nothing written before), p_1 = (1, 0, 0).
  // Then slot 1 (w_2 = (0, 1, 0)): L_2[i,j] = w_i p_1,j -> L_2[1,0] = 1 and 0 elsewhere; p_2 = (0, 1, 0).
  // Had p been updated before the link (p_2 into L_2), L_2 = w_2 p_2ᵀ would be on the diagonal: zeroed, all 0.
  // Reading: f = L_2 w^r from slot 0 is slot 1 (the next write), b = L_2ᵀ w^r from slot 1 is slot 0.
  Tape tape(DType::f64);
  const Tensor l0 = square(1, 3, {0, 0, 0, 0, 0, 0, 0, 0, 0}), p0 = weights(1, 3, {0, 0, 0});
  const Tensor w1 = weights(1, 3, {1, 0, 0}), w2 = weights(1, 3, {0, 1, 0});
  const DncTemporalLinks t1 = dnc_temporal_links(tape.input(l0), tape.input(p0), tape.input(w1));
  const DncTemporalLinks t2 = dnc_temporal_links(t1.link, t1.precedence, tape.input(w2));
  check_values(t1.link.value_copy(), {0, 0, 0, 0, 0, 0, 0, 0, 0}, 0, "L_1");
  check_values(t1.precedence.value_copy(), {1, 0, 0}, 0, "p_1");
  check_values(t2.link.value_copy(), {0, 0, 0, 1, 0, 0, 0, 0, 0}, 0, "L_2");
  check_values(t2.precedence.value_copy(), {0, 1, 0}, 0, "p_2");
  const Tensor at0 = weights(1, 3, {1, 0, 0}), at1 = weights(1, 3, {0, 1, 0});
  check_values(dnc_forward_weighting(t2.link, tape.input(at0)).value_copy(), {0, 1, 0}, 0, "forward from slot 0");
  check_values(dnc_backward_weighting(t2.link, tape.input(at1)).value_copy(), {1, 0, 0}, 0, "backward from slot 1");
}

TEST_CASE("dnc_forward_weighting is L w and dnc_backward_weighting Lᵀ w, by hand", "[ops][dnc]") {
  // L = [0 0.2 0.4; 0.1 0 0.3; 0.5 0.6 0], w = (0.5, 0.3, 0.2):
  //   f = L w  = (0.2·0.3 + 0.4·0.2, 0.1·0.5 + 0.3·0.2, 0.5·0.5 + 0.6·0.3) = (0.14, 0.11, 0.43)
  //   b = Lᵀ w = (0.1·0.3 + 0.5·0.2, 0.2·0.5 + 0.6·0.2, 0.4·0.5 + 0.3·0.3) = (0.13, 0.22, 0.29)
  // Sample 1: L = the cycle 0 -> 1 -> 2 -> 0 as L[i,j] = 1 for i = j + 1 mod 3, w = (1, 0, 0): f = (0, 1, 0), b = (0, 0, 1).
  const std::vector<Tensor> x = {square(2, 3, {0, 0.2, 0.4, 0.1, 0, 0.3, 0.5, 0.6, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0}),
                                 weights(2, 3, {0.5, 0.3, 0.2, 1, 0, 0})};
  // Upstream g = (1, 2, 3) | (0, 0, 0):
  //   forward:  grad_L[i,j] = g_i w_j = [0.5 0.3 0.2; 1 0.6 0.4; 1.5 0.9 0.6],  grad_w = Lᵀ g = (1.7, 2.0, 1.0)
  //   backward: grad_L[i,j] = w_i g_j = [0.5 1 1.5; 0.3 0.6 0.9; 0.2 0.4 0.6],  grad_w = L g = (1.6, 1.0, 1.7)
  const Tensor g = weights(2, 3, {1, 2, 3, 0, 0, 0});
  const std::vector<Tensor> f = forward_backward(x, [](std::span<const Var> v) { return dnc_forward_weighting(v[0], v[1]); }, g);
  const std::vector<Tensor> b = forward_backward(x, [](std::span<const Var> v) { return dnc_backward_weighting(v[0], v[1]); }, g);
  check_values(f[0], {0.14, 0.11, 0.43, 0, 1, 0}, 1e-15, "f");
  check_values(b[0], {0.13, 0.22, 0.29, 0, 0, 1}, 1e-15, "b");
  check_values(f[1], {0.5, 0.3, 0.2, 1, 0.6, 0.4, 1.5, 0.9, 0.6, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1e-15, "forward: grad L");
  check_values(f[2], {1.7, 2.0, 1.0, 0, 0, 0}, 1e-15, "forward: grad w");
  check_values(b[1], {0.5, 1, 1.5, 0.3, 0.6, 0.9, 0.2, 0.4, 0.6, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1e-15, "backward: grad L");
  check_values(b[2], {1.6, 1.0, 1.7, 0, 0, 0}, 1e-15, "backward: grad w");
}

TEST_CASE("dnc_forward_weighting equals vec_matvec, dnc_backward_weighting vec_matvec of transpose", "[ops][dnc]") {
  for (SampleSize size : {SampleSize::large, SampleSize::lanes}) {
    Rng rng(21);
    OpSample forward = find_op("dnc_forward_weighting")->sample(rng, size);
    OpSample backward = forward, matvec = forward, matvec_t = forward;
    backward.apply = [](Tape&, std::span<const Var> v) { return dnc_backward_weighting(v[0], v[1]); };
    matvec.apply = [](Tape&, std::span<const Var> v) { return vec_matvec(v[0], v[1]); };
    matvec_t.apply = [](Tape&, std::span<const Var> v) { return vec_matvec(transpose(v[0]), v[1]); };
    check_close(run_in(DType::f64, matvec, 9), run_in(DType::f64, forward, 9), 1e-13, "forward");
    check_close(run_in(DType::f64, matvec_t, 9), run_in(DType::f64, backward, 9), 1e-13, "backward");
  }
}

TEST_CASE("dnc_read_weighting mixes backward, content and forward in π's order, by hand", "[ops][dnc]") {
  // π = (0.2, 0.5, 0.3), b = (1, 0, 0), c = (0, 0.4, 0.6), f = (0, 0, 1):
  //   0.2 b + 0.5 c + 0.3 f = (0.2, 0.2, 0.3 + 0.3) = (0.2, 0.2, 0.6)
  // Sample 1: π = (0, 0, 1), the forward mode alone: f = (0.5, 0.5, 0).
  const std::vector<Tensor> x = {weights(2, 3, {0.2, 0.5, 0.3, 0, 0, 1}), weights(2, 3, {1, 0, 0, 1, 0, 0}),
                                 weights(2, 3, {0, 0.4, 0.6, 0, 1, 0}), weights(2, 3, {0, 0, 1, 0.5, 0.5, 0})};
  // Upstream g = (1, 2, 3) | (1, 1, 1): grad_π = (⟨g, b⟩, ⟨g, c⟩, ⟨g, f⟩) = (1, 2.6, 3) | (1, 1, 1);
  //   grad_b = π_0 g = (0.2, 0.4, 0.6) | 0, grad_c = π_1 g = (0.5, 1, 1.5) | 0, grad_f = π_2 g = (0.3, 0.6, 0.9) | 1
  const std::vector<Tensor> out = forward_backward(
      x, [](std::span<const Var> v) { return dnc_read_weighting(v[0], v[1], v[2], v[3]); }, weights(2, 3, {1, 2, 3, 1, 1, 1}));
  check_values(out[0], {0.2, 0.2, 0.6, 0.5, 0.5, 0}, 1e-15, "w^r");
  check_values(out[1], {1, 2.6, 3, 1, 1, 1}, 1e-15, "grad π");
  check_values(out[2], {0.2, 0.4, 0.6, 0, 0, 0}, 1e-15, "grad b");
  check_values(out[3], {0.5, 1, 1.5, 0, 0, 0}, 1e-15, "grad c");
  check_values(out[4], {0.3, 0.6, 0.9, 1, 1, 1}, 1e-15, "grad f");
}

TEST_CASE("dnc_read_weighting's fallback gives content what the directions do not place, by hand", "[ops][dnc]") {
  // Sample 0: π = (0.2, 0.5, 0.3), b = (1, 0, 0) (Σ 1), c = (0, 0.4, 0.6), f = (0, 0, 0.5) (Σ 0.5):
  //   κ = 0.5 + 0.2·0 + 0.3·0.5 = 0.65, w = 0.2 b + 0.65 c + 0.3 f = (0.2, 0.26, 0.54), Σ 1.
  // Sample 1, the empty read: π = (0.5, 0, 0.5), b = f = 0, c = (0, 1, 0): the plain form reads nothing, the
  //   fallback κ = 1, w = c.
  const std::vector<Tensor> x = {weights(2, 3, {0.2, 0.5, 0.3, 0.5, 0, 0.5}), weights(2, 3, {1, 0, 0, 0, 0, 0}),
                                 weights(2, 3, {0, 0.4, 0.6, 0, 1, 0}), weights(2, 3, {0, 0, 0.5, 0, 0, 0})};
  // Upstream g = (1, 2, 3) | (1, 1, 1); G_c = ⟨g, c⟩ = 2.6 | 1.
  //   grad π = (⟨g,b⟩ + (1 − Σb) G_c, G_c, ⟨g,f⟩ + (1 − Σf) G_c) = (1, 2.6, 1.5 + 1.3) | (1, 1, 1)
  //   grad b = π_0 (g − G_c) = 0.2 (−1.6, −0.6, 0.4) | 0;  grad c = κ g = 0.65 (1, 2, 3) | (1, 1, 1)
  //   grad f = π_2 (g − G_c) = 0.3 (−1.6, −0.6, 0.4) | 0
  const std::vector<Tensor> out = forward_backward(
      x, [](std::span<const Var> v) { return dnc_read_weighting(v[0], v[1], v[2], v[3], true); },
      weights(2, 3, {1, 2, 3, 1, 1, 1}));
  check_values(out[0], {0.2, 0.26, 0.54, 0, 1, 0}, 1e-15, "w^r");
  check_values(out[1], {1, 2.6, 2.8, 1, 1, 1}, 1e-14, "grad π");
  check_values(out[2], {-0.32, -0.12, 0.08, 0, 0, 0}, 1e-15, "grad b");
  check_values(out[3], {0.65, 1.3, 1.95, 1, 1, 1}, 1e-15, "grad c");
  check_values(out[4], {-0.48, -0.18, 0.12, 0, 0, 0}, 1e-15, "grad f");
  // Without the fallback, sample 1 reads nothing.
  const std::vector<Tensor> plain = forward_backward(
      x, [](std::span<const Var> v) { return dnc_read_weighting(v[0], v[1], v[2], v[3]); }, weights(2, 3, {1, 2, 3, 1, 1, 1}));
  check_values(plain[0], {0.2, 0.2, 0.45, 0, 0, 0}, 1e-15, "w^r without the fallback");
}

TEST_CASE("the DNC ops name themselves and the shapes when operands do not fit", "[ops][dnc][errors]") {
  Tape tape;
  Tensor w(DType::f32, weighting(4, 16)), w8(DType::f32, weighting(4, 8)), g(DType::f32, scalars(4)), g2(DType::f32, scalars(2));
  Tensor l(DType::f32, matrices(4, 16, 16)), l8(DType::f32, matrices(4, 8, 16)), pi(DType::f32, weighting(4, 3));
  Tensor m(DType::f32, matrices(4, 3, 16));
  const Var u = tape.input(w), gate = tape.input(g);
  CHECK_THROWS_WITH(dnc_usage(u, tape.input(w8), std::span<const Var>(&gate, 1), std::span<const Var>(&u, 1)),
                    Contains("dnc_usage: [4,1,16] and [4,1,8]"));
  const Var gate2 = tape.input(g2);
  CHECK_THROWS_WITH(dnc_usage(u, u, std::span<const Var>(&gate2, 1), std::span<const Var>(&u, 1)),
                    Contains("dnc_usage: [4,1,16] and [2,1,1]") && Contains("free gate"));
  CHECK_THROWS_WITH(dnc_usage(u, u, std::span<const Var>(&gate, 1), std::span<const Var>()),
                    Contains("dnc_usage: 1 free gates and 0 read weightings"));
  CHECK_THROWS_AS(dnc_allocation(tape.input(m)), ShapeError);
  CHECK_THROWS_WITH(dnc_allocation(tape.input(m)), Contains("dnc_allocation: [4,3,16]"));
  CHECK_THROWS_WITH(dnc_link(tape.input(l8), u, u), Contains("dnc_link: [4,8,16] and [4,1,16]"));
  CHECK_THROWS_WITH(dnc_link(tape.input(l), u, tape.input(w8)), Contains("dnc_link: [4,1,16] and [4,1,8]"));
  CHECK_THROWS_WITH(dnc_precedence(u, tape.input(w8)), Contains("dnc_precedence: [4,1,16] and [4,1,8]"));
  CHECK_THROWS_WITH(dnc_forward_weighting(tape.input(l), tape.input(w8)), Contains("dnc_forward_weighting: [4,16,16] and [4,1,8]"));
  CHECK_THROWS_WITH(dnc_backward_weighting(tape.input(l8), u), Contains("dnc_backward_weighting: [4,8,16] and [4,1,16]"));
  CHECK_THROWS_WITH(dnc_read_weighting(u, u, u, u), Contains("dnc_read_weighting: [4,1,16] and [4,1,16]") && Contains("[B,3]"));
  CHECK_THROWS_WITH(dnc_read_weighting(tape.input(pi), u, tape.input(w8), u), Contains("dnc_read_weighting: [4,1,16] and [4,1,8]"));
}
