// mat with several terms against a naive sum, and gradcheck: the per-term path (each term's association
// order, U first or V first, at the first position and after it, where a U-first term's product goes
// through scratch and is added) and the stacked path (all terms V first, one shared Uᵀ GEMM), with terms
// whose inputs want no gradient and a P shared by two terms; and for both paths, that a fresh grad_P is
// assigned (not added to) and a live one added to; each with Q̂ / T̂ saved and recomputed in backward
// (Tape::recompute_saved), the two bit for bit the same.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"

using namespace matmem;

namespace {
struct Dims {
  std::int64_t r, c;
};
struct Case {
  const char* name;
  std::int64_t rp, cp;
  std::vector<Dims> terms;
  std::vector<int> constant;  // inputs (index into P1 U1 V1 P2 ...) that are not differentiable
  bool shared_p = false;      // the last term's P is the first term's Var (same shape)
};

// bilinear.cpp's u_first and stacked() decide the path from the shapes:
// - output 4x3, P 5x2 and 6x2 U first, P 2x5 V first: V first for all would cost 1.33x the FLOPs,
//   so per term;
// - output 4x3, P 2x5, 3x6, 1x4 all V first on their own: stacked;
// - output 3x14, P 2x3 U first (14 output columns, small), P 2x5 V first: stacked.
const Case kCases[] = {
    {"per term", 4, 3, {{5, 2}, {2, 5}, {6, 2}}, {}},
    {"per term, constant P1 and V2, shared P", 4, 3, {{5, 2}, {2, 5}, {5, 2}}, {0, 5}, true},
    {"stacked, all V first", 4, 3, {{2, 5}, {3, 6}, {1, 4}}, {}},
    {"stacked, constant P1, U2 and V3", 4, 3, {{2, 5}, {3, 6}, {1, 4}}, {0, 4, 8}},
    {"stacked, shared P", 4, 3, {{2, 5}, {3, 6}, {2, 5}}, {}, true},
    {"stacked, a U-first term switched", 3, 14, {{2, 3}, {2, 5}}, {}},
    {"stacked, only U2 wants a gradient", 3, 14, {{2, 3}, {2, 5}}, {0, 1, 2, 3, 5, 6}},
};

std::vector<GradcheckInput> inputs(const Case& k, std::int64_t batch) {
  Rng rng(5);
  std::vector<GradcheckInput> in;
  for (std::size_t t = 0; t < k.terms.size(); ++t) {
    const std::string n = std::to_string(t + 1);
    in.push_back({"P" + n, random_tensor(rng, matrices(batch, k.terms[t].r, k.terms[t].c))});
    in.push_back({"U" + n, random_tensor(rng, parameter(k.terms[t].r, k.rp))});
    in.push_back({"V" + n, random_tensor(rng, parameter(k.terms[t].c, k.cp))});
  }
  in.push_back({"B", random_tensor(rng, parameter(k.rp, k.cp))});
  for (int i : k.constant) in[i].differentiable = false;
  return in;
}

// recompute: the tape recomputes saved buffers whatever its size (else it always saves them).
GradcheckFn terms_of(const Case& k, bool recompute) {
  return [&k, recompute](Tape& tape, std::span<const Var> x) {
    tape.set_recompute_above(recompute ? 0 : SIZE_MAX);
    std::vector<MatTerm> terms;
    for (std::size_t t = 0; t < k.terms.size(); ++t) terms.push_back({x[3 * t], x[3 * t + 1], x[3 * t + 2]});
    if (k.shared_p) terms.back().p = x[0];
    return mat(terms, x[3 * k.terms.size()]);
  };
}
}  // namespace

TEST_CASE("mat per term and stacked equals the naive sum and passes gradcheck", "[ops][gradcheck]") {
  for (const Case& k : kCases) {
    const std::size_t nt = k.terms.size();
    for (std::int64_t batch : {1, 3, 17})
    for (bool recompute : {false, true}) {
      INFO(k.name << ", batch " << batch << (recompute ? ", recomputed" : ", saved"));
      std::vector<GradcheckInput> in = inputs(k, batch);
      const GradcheckFn f = terms_of(k, recompute);
      for (DType dtype : {DType::f64, DType::f32}) {
        Tape tape(dtype);
        std::vector<Tensor> values;
        for (const auto& x : in) values.push_back(x.value.to(dtype));
        std::vector<Var> vars;
        for (const Tensor& v : values) vars.push_back(tape.input(v));
        const Var y = f(tape, vars);
        REQUIRE(y.shape() == matrices(batch, k.rp, k.cp));
        const Tensor got = y.value_copy();
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t i = 0; i < k.rp; ++i)
            for (std::int64_t j = 0; j < k.cp; ++j) {
              double expect = in[3 * nt].value.at(0, i, j);
              for (std::size_t t = 0; t < nt; ++t) {
                const Tensor& p = k.shared_p && t == nt - 1 ? in[0].value : in[3 * t].value;
                for (std::int64_t a = 0; a < k.terms[t].r; ++a)
                  for (std::int64_t c = 0; c < k.terms[t].c; ++c)
                    expect += in[3 * t + 1].value.at(0, a, i) * p.at(b, a, c) * in[3 * t + 2].value.at(0, c, j);
              }
              const double tol = dtype == DType::f32 ? 1e-5 : 1e-12;  // float32: sums of ~30 products near 1
              CHECK(got.at(b, i, j) == Approx(expect).epsilon(tol).margin(tol));
            }
      }
      GradcheckOptions opt;
      opt.full_jacobian = true;
      const GradcheckReport report = gradcheck(f, in, nullptr, opt);
      INFO(report.str());
      CHECK(report.passed);
    }
  }
}

namespace {
// Every differentiable input's gradient of <seed, f(x)> (or of <seed, f(x) + 0 Σ P_t> with later_p: a later
// consumer of every P runs its backward first, so mat adds to a live grad_P). twice: backward runs twice on
// the same tape and the second's gradients are returned; it hands mat the first's grad_P buffers as fresh,
// so adding to them instead of assigning would double the gradient.
std::vector<Tensor> mat_grads(const Case& k, const std::vector<GradcheckInput>& in, DType dtype, bool later_p, bool twice,
                              bool recompute) {
  Tape tape(dtype);
  std::vector<Tensor> values;
  for (const auto& x : in) values.push_back(x.value.to(dtype));
  std::vector<Var> vars;
  for (std::size_t a = 0; a < values.size(); ++a) vars.push_back(tape.input(values[a], in[a].differentiable));
  Var y = terms_of(k, recompute)(tape, vars);
  if (later_p)
    for (std::size_t t = 0; t < k.terms.size(); ++t)
      if (in[3 * t].differentiable) y = add(y, scale(sum(vars[3 * t]), 0.0));
  Tensor seed(dtype, y.shape());
  Rng rng(11);
  for (std::int64_t e = 0; e < seed.numel(); ++e) seed.set(e, rng.normal());
  tape.backward(y, seed);
  if (twice) tape.backward(y, seed);
  std::vector<Tensor> grads;
  for (std::size_t a = 0; a < vars.size(); ++a)
    if (in[a].differentiable) grads.push_back(vars[a].grad_copy());
  return grads;
}
}  // namespace

TEST_CASE("mat per term and stacked assigns a fresh grad_P and adds to a live one", "[ops]") {
  for (const Case& k : kCases) {
    for (std::int64_t batch : {1, 3, 17}) {
      const std::vector<GradcheckInput> in = inputs(k, batch);
      const std::vector<Tensor> ref = mat_grads(k, in, DType::f64, false, false, false);
      for (DType dtype : {DType::f64, DType::f32}) {
        const double tol = dtype == DType::f32 ? 1e-5 : 1e-12;
        for (const auto& [later_p, twice] : {std::pair{false, false}, std::pair{false, true}, std::pair{true, false}}) {
          INFO(k.name << ", batch " << batch << (dtype == DType::f32 ? ", float32" : ", float64")
                      << (later_p ? ", grad_P live" : "") << (twice ? ", second backward" : ""));
          const std::vector<Tensor> got = mat_grads(k, in, dtype, later_p, twice, false);
          const std::vector<Tensor> recomputed = mat_grads(k, in, dtype, later_p, twice, true);
          REQUIRE(got.size() == ref.size());
          REQUIRE(recomputed.size() == ref.size());
          for (std::size_t a = 0; a < ref.size(); ++a)
            for (std::int64_t e = 0; e < ref[a].numel(); ++e) {
              CHECK(got[a].get(e) == Approx(ref[a].get(e)).epsilon(tol).margin(tol));
              CHECK(recomputed[a].get(e) == got[a].get(e));
            }
        }
      }
    }
  }
}

// ops::recomputes: once a pass has outgrown the cache, a first-stage product far smaller than the weights its GEMM
// would read again is saved all the same (a vector map at one sequence an update: one row against the whole V);
// from a quarter of them (here batch 16: 4 x 16 x 48 = 64 x 48) it is recomputed.
TEST_CASE("a vector map's first-stage product is saved where recomputing it would read the weights again", "[ops]") {
  const std::int64_t c = 64, C = 48;  // x [B,1,64]; V (mat: V first, c > C) and V_s of two maps [64,20 | 28]
  for (const std::int64_t B : {1, 15, 16}) {
    INFO("batch " << B);
    Rng rng(9);
    const std::vector<Tensor> t = {random_tensor(rng, matrices(4, 4, 4)), random_tensor(rng, matrices(B, 1, c)),
                                   random_tensor(rng, parameter(1, 1)),   random_tensor(rng, parameter(1, 1)),
                                   random_tensor(rng, parameter(c, C)),   random_tensor(rng, parameter(1, 20)),
                                   random_tensor(rng, parameter(1, 28))};
    Tape tape(DType::f64);
    hadamard(tape.input(t[0]), tape.input(t[0]));  // a pass that holds some bytes
    tape.clear();
    tape.set_recompute_above(1);  // the pass above outgrew it
    REQUIRE(tape.recompute_saved());
    const Var x = tape.input(t[1], true), u1 = tape.input(t[2], true), u2 = tape.input(t[3], true);
    const Var v = tape.input(t[4], true), b1 = tape.input(t[5], true), b2 = tape.input(t[6], true);
    const bool saves = B < 16;
    CHECK((tape.node(mat({{x, u1, v}}, Var{}).id).saved_count > 0) == saves);
    std::array<Var, 2> y;
    stacked_projections(x, v, std::array<Var, 2>{u1, u2}, std::array<Var, 2>{b1, b2}, y);
    CHECK((tape.node(y[0].id).saved_count > 0) == saves);
    tape.set_recompute_above(0);  // always, as the tests of the recomputed path set it
    CHECK(tape.node(mat({{x, u1, v}}, Var{}).id).saved_count == 0);
  }
}

TEST_CASE("mat saves Q̂ on a small tape and recomputes it once a pass has outgrown the cache", "[ops]") {
  for (const Case& k : {kCases[0], kCases[2]}) {  // per term; stacked
    INFO(k.name);
    const std::vector<GradcheckInput> in = inputs(k, 3);
    std::vector<Tensor> values;
    for (const auto& x : in) values.push_back(x.value.to(DType::f32));
    Tape tape(DType::f32);
    auto record = [&] {
      std::vector<Var> vars;
      for (const Tensor& v : values) vars.push_back(tape.input(v));
      std::vector<MatTerm> terms;
      for (std::size_t t = 0; t < k.terms.size(); ++t) terms.push_back({vars[3 * t], vars[3 * t + 1], vars[3 * t + 2]});
      return mat(terms, vars.back());
    };
    CHECK_FALSE(tape.recompute_saved());
    CHECK(tape.node(record().id).saved_count > 0);
    tape.clear();
    tape.set_recompute_above(tape.peak_pass_bytes());  // as if that pass had filled the cache
    CHECK(tape.recompute_saved());
    CHECK(tape.node(record().id).saved_count == 0);
  }
}
