#include <catch2/catch.hpp>

#include <array>
#include <cmath>

#include "matmem/autodiff/parameters.hpp"
#include "matmem/autodiff/profile.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/random.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("a 1000-step unroll runs forward and backward without recursion", "[tape]") {
  Tape tape(DType::f64);
  Tensor x(DType::f64, matrices(2, 3, 3));
  x.fill(1.0);
  Var h = tape.input(x, true);
  Var v = h;
  for (int t = 0; t < 1000; ++t) v = scale(v, 0.999);
  tape.backward(sum(v));
  CHECK(x.numel() == 18);
  CHECK(h.grad<double>()[0] == Approx(std::pow(0.999, 1000)));
  tape.clear();
  CHECK(tape.size() == 0);
}

TEST_CASE("gradients accumulate over every use of a value", "[tape]") {
  Tape tape(DType::f64);
  Tensor x(DType::f64, matrices(1, 1, 2));
  x.set(0, 3.0);
  x.set(1, -2.0);
  Var a = tape.input(x, true);
  Var y = sum(add(hadamard(a, a), a));  // Σ x² + x
  tape.backward(y);
  CHECK(a.grad<double>()[0] == Approx(7.0));
  CHECK(a.grad<double>()[1] == Approx(-3.0));
}

TEST_CASE("a parameter has one leaf per tape pass and its gradient accumulates into the Parameter", "[tape]") {
  ParameterStore params(DType::f64);
  Parameter& w = params.add("layer/W", matrices(1, 1, 1));
  w.value.set(0, 2.0);
  Tape tape(DType::f64);
  Var a = tape.param(w), b = tape.param(w);
  CHECK(a.id == b.id);
  tape.backward(sum(hadamard(a, b)));  // d(w²)/dw = 4
  CHECK(w.grad.get(0) == Approx(4.0));
  tape.clear();
  tape.backward(sum(scale(tape.param(w), 3.0)));
  CHECK(w.grad.get(0) == Approx(7.0));  // accumulated until zero_grad
  params.zero_grad();
  CHECK(w.grad.get(0) == 0.0);
}

TEST_CASE("inside NoGrad nothing requires a gradient", "[tape]") {
  ParameterStore params(DType::f32);
  Parameter& w = params.add("w", matrices(1, 2, 2));
  Tape tape(DType::f32);
  {
    NoGrad guard(tape);
    Var y = tanh(tape.param(w));
    CHECK_FALSE(y.requires_grad());
  }
  CHECK(tape.grad_enabled());
  tape.clear();
  CHECK(tanh(tape.param(w)).requires_grad());
}

TEST_CASE("anomaly mode names the first op that produced a non-finite value", "[tape][errors]") {
  Tape tape(DType::f32);
  Tensor x(DType::f32, matrices(1, 1, 3));
  x.set(1, 200.0f);  // e^200 overflows float
  SECTION("off: the Inf passes silently") {
    REQUIRE_FALSE(tape.anomaly_mode());
    float y0 = 0.0f, y1 = 0.0f;
    CHECK_NOTHROW(y0 = exp(tape.input(x)).value<float>()[0]);
    CHECK_NOTHROW(y1 = exp(tape.input(x)).value<float>()[1]);
    CHECK(y0 == 1.0f);
    CHECK(std::isinf(y1));  // the same input that anomaly mode refuses below
  }
  SECTION("on: exp is named") {
    tape.set_anomaly_mode(true);
    Var t = scale(tape.input(x), 1.0);
    CHECK_THROWS_AS(exp(t), NumericError);
    tape.clear();
    CHECK_THROWS_WITH(exp(tape.input(x)), Contains("op exp") && Contains("Inf") && Contains("j=1"));
  }
}

TEST_CASE("anomaly mode also checks the gradients a backward produces", "[tape][errors]") {
  Tape tape(DType::f64);
  tape.set_anomaly_mode(true);
  Tensor w(DType::f64, weighting(1, 3));
  w.set(0, 0.0);
  w.set(1, 0.5);
  w.set(2, 0.5);
  Tensor gamma(DType::f64, scalars(1));
  gamma.set(0, 1.0);
  Var y = sharpen(tape.input(w, true), tape.input(gamma, true));
  Tensor seed(DType::f64, weighting(1, 3));
  seed.set(0, std::nan(""));
  CHECK_THROWS_WITH(tape.backward(y, seed), Contains("sharpen") && Contains("NaN"));
}

TEST_CASE("after the first pass the same pass allocates no new arena block", "[tape][memory]") {
  Tape tape(DType::f32);
  Tensor x(DType::f32, matrices(16, 15, 15));
  auto pass = [&] {
    tape.clear();
    Var v = tape.input(x, true);
    for (int t = 0; t < 200; ++t) v = tanh(v);
    tape.backward(sum(v));
  };
  pass();
  pass();
  const std::size_t reserved = tape.arena().bytes_reserved();
  CHECK(tape.arena().block_count() == 1);
  pass();
  CHECK(tape.arena().bytes_reserved() == reserved);
  CHECK(tape.arena().block_count() == 1);
}

TEST_CASE("backward of a non-scalar needs a seed of its shape", "[tape][errors]") {
  Tape tape(DType::f32);
  Tensor x(DType::f32, matrices(2, 2, 2));
  Var y = tanh(tape.input(x, true));
  CHECK_THROWS_WITH(tape.backward(y), Contains("[2,2,2]") && Contains("seed"));
}

TEST_CASE("an op node's gradient buffer is reused once consumed, and reading it then is refused", "[tape][memory]") {
  // y = Σ tanh(tanh(tanh(x))): the three tanh outputs have the same size, so after the outer two have run
  // their backward their buffers serve the inner ones; the input's gradient must be exact all the same.
  Tensor x(DType::f64, matrices(2, 3, 4));
  for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, 0.1 * double(k) - 1.0);
  auto run = [&](bool retain, Tensor* mid_grad) {
    Tape tape(DType::f64);
    tape.set_retain_grads(retain);
    Var in = tape.input(x, true);
    Var a = tanh(in), b = tanh(a), c = tanh(b);
    tape.backward(sum(c));
    if (retain) *mid_grad = b.grad_copy();
    else CHECK_THROWS_WITH(b.grad_copy(), Contains("released") && Contains("set_retain_grads"));
    return in.grad_copy();
  };
  Tensor mid;
  const Tensor reused = run(false, nullptr), kept = run(true, &mid);
  for (std::int64_t k = 0; k < x.numel(); ++k) {
    const double t1 = std::tanh(x.get(k)), t2 = std::tanh(t1), t3 = std::tanh(t2);
    const double d3 = 1 - t3 * t3, d2 = 1 - t2 * t2, d1 = 1 - t1 * t1;
    CHECK(reused.get(k) == Approx(d3 * d2 * d1).epsilon(1e-12));
    CHECK(kept.get(k) == reused.get(k));
    CHECK(mid.get(k) == Approx(d3).epsilon(1e-12));
  }
}

TEST_CASE("a second backward on the same tape gives the same gradients as the first", "[tape][memory]") {
  Tensor x(DType::f64, matrices(3, 2, 2));
  for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, 0.2 * double(k) - 1.1);
  Tape tape(DType::f64);
  Var in = tape.input(x, true);
  Var y = sum(hadamard(tanh(in), sigmoid(scale(in, 2.0))));
  tape.backward(y);
  const Tensor first = in.grad_copy();
  tape.backward(y);
  const Tensor second = in.grad_copy();
  for (std::int64_t k = 0; k < x.numel(); ++k) CHECK(second.get(k) == first.get(k));
}

TEST_CASE("the op profile keeps the memory ops' traffic and which ops are matrix products", "[tape][profile]") {
  // A memory of B = 2, N = 3 slots of 2 x 2: 24 values, 96 bytes in float32.
  Rng rng(3);
  auto random = [&](Shape s) {
    Tensor t(DType::f32, s);
    for (std::int64_t k = 0; k < t.numel(); ++k) t.set(k, 0.1 + 0.8 * rng.uniform());
    return t;
  };
  const Tensor m = random(memory(2, 3, 2, 2)), w = random(weighting(2, 3)), e = random(matrices(2, 2, 2)),
               a = random(matrices(2, 2, 2)), k = random(matrices(2, 2, 2)), u = random(parameter(2, 2));
  Tape tape(DType::f32);
  OpProfile profile;
  tape.set_profile(&profile);
  Var mv = tape.input(m, true), wv = tape.input(w, true), ev = tape.input(e, true), av = tape.input(a, true);
  std::array<Var, 2> out;
  memory_read_write(mv, std::span<const Var>(&wv, 1), wv, ev, av, out);
  Var sim = cosine_similarity(tape.input(k, true), out[0]);
  ParameterStore params(DType::f32);
  Parameter& pu = params.add("u", parameter(2, 2));
  pu.value = u;
  Var prod = bilinear(out[1], tape.param(pu), tape.input(u, true));
  tape.backward(add(sum(sim), sum(tanh(prod))));
  {
    NoGrad no_grad(tape);
    memory_read(out[0], wv);  // forward only: its forward's traffic alone
  }
  tape.set_profile(nullptr);
  auto row = [&](const std::string& name) {
    for (const OpProfile::Row& r : profile.rows)
      if (r.name == name) return r;
    FAIL("no row " << name);
    return OpProfile::Row{};
  };
  const double state = 24 * 4;
  CHECK(row("memory_read_write").traffic == (2 + 3) * state);  // M read, M' written; M, grad M' read, grad M written
  CHECK(row("cosine_similarity").traffic == (1 + 3) * state);  // M read; M read, grad M read and written
  CHECK(row("memory_read").traffic == 1 * state);
  CHECK(row("bilinear").gemm);
  // A matrix product's operands, values: forward reads X (8), U and V (4 each) and writes Y (8); backward reads
  // them and grad Y again and writes grad X and grad V (12), not the parameter U's gradient (formed once a pass
  // where its product is deferred).
  CHECK(row("bilinear").traffic == (16 + 8 + 16 + 8 + 12) * 4.0);
  CHECK_FALSE(row("memory_read_write").gemm);
  CHECK_FALSE(row("tanh").gemm);
  CHECK(row("tanh").traffic == 0);
}

TEST_CASE("the op profile counts every forward and backward call by op", "[tape][profile]") {
  Tensor x(DType::f32, matrices(2, 3, 3));
  x.fill(0.5);
  Tape tape(DType::f32);
  OpProfile profile;
  tape.set_profile(&profile);
  Var in = tape.input(x, true);
  Var y = sum(add(tanh(in), tanh(scale(in, 3.0))));
  tape.backward(y);
  const double flops = tape.flops().total();
  tape.set_profile(nullptr);
  tanh(in);  // not counted
  auto row = [&](const std::string& name) {
    for (const OpProfile::Row& r : profile.rows)
      if (r.name == name) return r;
    FAIL("no row " << name);
    return OpProfile::Row{};
  };
  CHECK(row("tanh").forward_calls == 2);
  CHECK(row("tanh").backward_calls == 2);
  CHECK(row("scale").forward_calls == 1);
  CHECK(row("sum").backward_calls == 1);
  CHECK(row("tanh").bytes == 2.0 * 18 * 4);
  CHECK(row("tanh").flops > 0);
  double rows_flops = 0;
  for (const OpProfile::Row& r : profile.rows) rows_flops += r.flops;
  CHECK(rows_flops == flops);  // every op's FLOPs, forward and backward, in its row
  CHECK(profile.total_ns() > 0);
}

namespace {
// y = x0 + x1; backward assigns a fresh input gradient and adds to a live one.
template <class T>
struct AssigningAddKernel {
  static void forward(const OpCall<T>& c) {
    for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) c.y[k] = c.x[0][k] + c.x[1][k];
  }
  static void backward(const OpCall<T>& c) {
    for (int a = 0; a < 2; ++a)
      if (T* g = c.grad_x[a])
        for (std::int64_t k = 0; k < c.y_shape.numel(); ++k) g[k] = c.fresh(a) ? c.grad_y[k] : g[k] + c.grad_y[k];
  }
};
constexpr OpDef kAssigningAdd = make_op<AssigningAddKernel>("assigning_add", nullptr, /*assigns_fresh=*/true);
}  // namespace

TEST_CASE("an op that assigns fresh gradients gets one only as the first contributor, once per input", "[tape]") {
  Tensor x(DType::f64, matrices(1, 1, 3));
  x.fill(0.5);
  Tensor ones(DType::f64, matrices(1, 1, 3));
  ones.fill(1.0);
  Tape tape(DType::f64);
  Var a = tape.input(x, true), b = tape.input(ones, true);
  // d/da of (a + a) + 3a: the later `scale` contributes first, so the op adds; and a appears twice, so
  // neither of its slots may be handed an uninitialised buffer.
  Var twice = tape.apply(kAssigningAdd, {a, a}, a.shape());
  Var y = sum(add(add(twice, scale(a, 3.0)), tape.apply(kAssigningAdd, {b, b}, b.shape())));
  tape.backward(y);
  for (int k = 0; k < 3; ++k) CHECK(a.grad<double>()[k] == 5.0);
  for (int k = 0; k < 3; ++k) CHECK(b.grad<double>()[k] == 2.0);
  // b + a as the only consumer: each is fresh, assigned once.
  Tape t2(DType::f64);
  Var a2 = t2.input(x, true), b2 = t2.input(ones, true);
  t2.backward(sum(t2.apply(kAssigningAdd, {a2, b2}, a2.shape())));
  for (int k = 0; k < 3; ++k) CHECK(a2.grad<double>()[k] == 1.0);
}

namespace {
// Two outputs of one input: y0 = 2x, y1 = x². Counts its calls, so the tests see backward run once.
int two_outputs_backward_calls = 0;
template <class T>
struct TwoOutputsKernel {
  static void forward(const OpCall<T>& c) {
    for (std::int64_t k = 0; k < c.x_shape[0].numel(); ++k) {
      c.ys[0][k] = 2 * c.x[0][k];
      c.ys[1][k] = c.x[0][k] * c.x[0][k];
    }
  }
  static void backward(const OpCall<T>& c) {
    ++two_outputs_backward_calls;
    for (std::int64_t k = 0; k < c.x_shape[0].numel(); ++k)
      c.grad_x[0][k] += 2 * c.grad_ys[0][k] + 2 * c.x[0][k] * c.grad_ys[1][k];
  }
};
constexpr OpDef kTwoOutputs = make_op<TwoOutputsKernel>("two_outputs");
std::array<Var, 2> two_outputs(Var x) {
  std::array<Var, 2> out;
  const std::array<Shape, 2> shapes{x.shape(), x.shape()};
  x.tape->apply(kTwoOutputs, {&x, 1}, shapes, out);
  return out;
}
}  // namespace

TEST_CASE("an op with two outputs runs backward once, after the consumers of both", "[tape]") {
  Tensor x(DType::f64, matrices(1, 1, 2));
  x.set(0, 3.0);
  x.set(1, -2.0);
  SECTION("both outputs consumed, by ops recorded in either order") {
    Tape tape(DType::f64);
    Var a = tape.input(x, true);
    const auto [y0, y1] = two_outputs(a);
    CHECK(y0.value<double>()[0] == 6.0);
    CHECK(y1.value<double>()[1] == 4.0);
    two_outputs_backward_calls = 0;
    tape.backward(sum(add(scale(y1, 3.0), y0)));  // d/dx (3x² + 2x) = 6x + 2
    CHECK(two_outputs_backward_calls == 1);
    CHECK(a.grad<double>()[0] == 20.0);
    CHECK(a.grad<double>()[1] == -10.0);
  }
  SECTION("only the second output consumed: the first's gradient is zero") {
    Tape tape(DType::f64);
    Var a = tape.input(x, true);
    two_outputs_backward_calls = 0;
    tape.backward(sum(two_outputs(a)[1]));
    CHECK(two_outputs_backward_calls == 1);
    CHECK(a.grad<double>()[0] == 6.0);
    CHECK(a.grad<double>()[1] == -4.0);
  }
  SECTION("backward from an output itself, with a seed; retained gradients stay readable") {
    Tape tape(DType::f64);
    tape.set_retain_grads(true);
    Var a = tape.input(x, true);
    const auto out = two_outputs(a);
    Tensor seed(DType::f64, x.shape());
    seed.fill(1.0);
    tape.backward(out[1], seed);
    CHECK(a.grad<double>()[0] == 6.0);
    CHECK(out[0].grad<double>()[0] == 0.0);
    CHECK(out[1].grad<double>()[0] == 1.0);
  }
  SECTION("outputs' gradient buffers are released after the op's backward") {
    Tape tape(DType::f64);
    Var a = tape.input(x, true);
    const auto out = two_outputs(a);
    tape.backward(sum(add(out[0], out[1])));
    CHECK_THROWS_WITH(out[0].grad<double>(), Contains("released"));
    CHECK_THROWS_WITH(out[1].grad<double>(), Contains("released"));
  }
}

namespace {
// `links` steps of a state v, alternating v ← v ⊙ tanh(a ⊙ v) (the link op reads the previous link) and
// v ← tanh(v + b) (its backward reads its own output), each v also read by the loss Σ_k Σ c ⊙ v_k. With
// segment > 0 the op producing each v is a link of a recomputed chain. values gets every v's Var.
struct ChainRun {
  Tensor x, a, b, c;
  explicit ChainRun(std::uint64_t seed) {
    Rng rng(seed);
    for (Tensor* t : {&x, &a, &b, &c}) *t = random_tensor(rng, matrices(2, 3, 4));
  }
  Var run(Tape& tape, int segment, std::vector<Var>& values, int links = 11) {
    const std::uint32_t chain = segment > 0 ? tape.chain(segment) : ChainLink::kNone;
    Var v = tape.input(x, true), av = tape.input(a, true), bv = tape.input(b, true), cv = tape.input(c, true);
    Var loss = sum(hadamard(cv, v));
    values.assign(1, v);
    for (int k = 0; k < links; ++k) {
      if (k % 2 == 0) {
        const Var t = tanh(hadamard(av, v));
        const ChainLink link(tape, chain);
        v = hadamard(v, t);
      } else {
        const Var u = add(v, bv);
        const ChainLink link(tape, chain);
        v = tanh(u);
      }
      values.push_back(v);
      loss = add(loss, sum(hadamard(cv, v)));
    }
    return loss;
  }
};

std::vector<double> grads_of(Tape& tape) {  // every leaf's gradient, in node order
  std::vector<double> g;
  for (std::uint32_t id = 0; id < tape.size(); ++id) {
    if (tape.node(id).op) continue;
    const Var v{&tape, id};
    const TensorView<double> gv = v.grad<double>();
    g.insert(g.end(), gv.data, gv.data + gv.shape.numel());
  }
  return g;
}
}  // namespace

TEST_CASE("a recomputed chain gives the values and gradients of keeping every value, bit for bit", "[tape][chain]") {
  ChainRun r(17);
  Tape plain(DType::f64);
  std::vector<Var> pv;
  const Var pl = r.run(plain, 0, pv);
  plain.backward(pl);
  const std::vector<double> want = grads_of(plain);
  for (int segment : {1, 2, 3, 4, 16}) {
    INFO("segment " << segment);
    Tape tape(DType::f64);
    OpProfile profile;
    tape.set_profile(&profile);
    std::vector<Var> cv;
    const Var loss = r.run(tape, segment, cv);
    CHECK(loss.item() == pl.item());
    tape.backward(loss);
    CHECK(grads_of(tape) == want);
    double recomputes = 0;
    for (const auto& row : profile.rows)
      if (row.name == "(recompute)") recomputes = double(row.backward_calls);
    if (segment > 1 && segment < 11) {
      // links 0 and `segment` share a ring buffer, and backward had to re-run segments
      CHECK(cv[1].tape->node(cv[1].id).value == cv[1 + segment].tape->node(cv[1 + segment].id).value);
      CHECK(recomputes > 0);
    } else {
      CHECK(recomputes == 0);
    }
    // a link's value read after its buffer was reused comes back (its segment re-run)
    for (std::size_t k = 0; k < cv.size(); ++k) {
      INFO("value " << k);
      const TensorView<double> got = cv[k].value<double>(), exp = pv[k].value<double>();
      CHECK(std::equal(got.data, got.data + got.shape.numel(), exp.data));
    }
  }
}

TEST_CASE("a recomputed chain refuses stale reads, self-overwrites and mismatched links", "[tape][chain]") {
  ChainRun r(5);
  Tape tape(DType::f64);
  std::vector<Var> v;
  r.run(tape, 3, v, 5);
  // link 0 (v[1]) shares its buffer with link 3 (v[4]): reading it in forward now is refused
  CHECK_THROWS_WITH(scale(v[1], 2.0), Contains("reads link 0") && Contains("segment 3"));
  CHECK_NOTHROW(scale(v[4], 2.0));
  CHECK_THROWS_WITH(tape.chain(0), Contains("segment 0"));
  CHECK_THROWS_WITH(tape.chain(Tape::kMaxSegment + 1), Contains("segment"));
  const std::uint32_t c = tape.chain(2);
  {
    const ChainLink link(tape, c);
    tanh(v[4]);
  }
  {
    const ChainLink link(tape, c);  // a second link of another size
    CHECK_THROWS_WITH(sum(v[4]), Contains("joins a recomputed chain"));
  }
  // segment 2: links 0 and 2 share the one ring buffer, so link 2 cannot read link 0
  const std::uint32_t d = tape.chain(2);
  Var l0, l1;
  {
    const ChainLink link(tape, d);
    l0 = tanh(v[4]);
  }
  {
    const ChainLink link(tape, d);
    l1 = tanh(l0);
  }
  {
    const ChainLink link(tape, d);
    CHECK_THROWS_WITH(tanh(l0), Contains("overwrite its own input"));
  }
  {
    const ChainLink link(tape, d);
    CHECK_NOTHROW(tanh(l1));  // the chain goes on after the refusal
  }
  Tape other(DType::f64);
  CHECK_THROWS_WITH(ChainLink(other, 0), Contains("no chain 0"));
}
