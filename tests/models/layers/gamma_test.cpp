// The gamma memory layer (models/layers/gamma.hpp): its recurrences against hand computation and closed forms,
// its stability by construction, and a small focused model using it gradient-checked whole.
#include "matmem/models/layers/gamma.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "matmem/models/layers/cells.hpp"
#include "matmem/runtime/error.hpp"

#include "matmem/models/core/model_gradcheck.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// A focused topology: the gamma memory on the input, then a tanh dense layer over all its taps and a linear
// output layer. Records every tap's value at every step when asked.
class GammaNet : public Model {
 public:
  GammaNet(GammaConfig config, std::int64_t rows = 2, std::int64_t cols = 3)
      : Model("g", DType::f64, 7),
        mem_("g/mem", "mem/", rows, cols, config),
        hidden_("g/hidden", 3, 2, Activation::tanh),
        out_("g/out", 2, 2) {
    set_io(rows, cols, 2, 2);
    for (StateDecl& d : mem_.states()) declare_state(std::move(d));
    for (int k = 0; k <= config.taps; ++k) names_.push_back(fmt::format("t{}", k));
  }
  void step(Step& s) override {
    const std::vector<Var> taps = mem_(s, s.input());
    if (record) {
      recorded.emplace_back();
      for (const Var& t : taps) recorded.back().push_back(t.value_copy());
    }
    std::vector<NamedTerm> terms;
    for (std::size_t k = 0; k < taps.size(); ++k) terms.push_back({names_[k], taps[k]});
    s.output(out_(s, {{"h", hidden_(s, terms)}}));
  }
  void set(const std::string& name, double v) { params().at(name).value.set(0, v); }

  bool record = false;
  std::vector<std::vector<Tensor>> recorded;  // [step][tap]

 private:
  GammaMemory mem_;
  MatDense hidden_, out_;
  std::vector<std::string> names_;
};

// Runs the model forward over `inputs` (one tensor per step) and returns the taps it recorded.
std::vector<std::vector<Tensor>> taps_over(GammaNet& m, const std::vector<Tensor>& inputs) {
  m.build();
  m.recorded.clear();
  m.record = true;
  Tape tape(DType::f64);
  Step s(m, tape);
  s.begin_sequence(inputs[0].shape().batch);
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    s.begin_step(std::int64_t(t), tape.input(inputs[t]), true);
    m.step(s);
    s.end_step();
  }
  m.record = false;
  return std::move(m.recorded);
}

std::vector<Tensor> random_inputs(int steps, std::int64_t batch, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Tensor> xs;
  for (int t = 0; t < steps; ++t) {
    Tensor x(DType::f64, matrices(batch, rows, cols));
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform(-1, 1));
    xs.push_back(std::move(x));
  }
  return xs;
}

// A unit impulse at step 0 of a 1×1 input, then zeros.
std::vector<Tensor> impulse(int steps) {
  std::vector<Tensor> xs;
  for (int t = 0; t < steps; ++t) {
    Tensor x(DType::f64, matrices(1, 1, 1));
    x.set(0, t == 0 ? 1.0 : 0.0);
    xs.push_back(std::move(x));
  }
  return xs;
}

double binomial(int n, int k) {
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * double(n - k + i) / double(i);
  return c;
}

// μ, c = √(μ(2 − μ)) and ω = μ√ν as the layer's recurrence uses them, read through the observer.
struct MuWatcher : StepObserver {
  double mu = -1, c = -1, omega = -1;
  void observe(std::int64_t, std::string_view name, const Var& v) override {
    if (name == "g/mem/mu") mu = v.value_copy().get(0);
    if (name == "g/mem/c") c = v.value_copy().get(0);
    if (name == "g/mem/omega") omega = v.value_copy().get(0);
  }
};
MuWatcher watch_mu(GammaNet& m) {
  m.build();
  Tape tape(m.dtype());
  Step s(m, tape);
  MuWatcher w;
  s.set_observer(&w);
  s.begin_sequence(1);
  s.begin_step(0, tape.constant(matrices(1, m.input_rows(), m.input_cols()), 0.0), true);
  m.step(s);
  return w;
}
}  // namespace

namespace {
// Over 7 steps of random 2×3 inputs, tap k of the memory of 3 taps is the input of k steps ago, bit for bit.
void check_delay_line(GammaNet& m, std::uint64_t seed) {
  const std::vector<Tensor> xs = random_inputs(7, 2, 2, 3, seed);
  const auto taps = taps_over(m, xs);
  for (int n = 0; n < 7; ++n)
    for (int k = 0; k <= 3; ++k)
      for (std::int64_t e = 0; e < xs[0].numel(); ++e) {
        INFO("step " << n << " tap " << k << " element " << e);
        CHECK(taps[n][k].get(e) == (n >= k ? xs[n - k].get(e) : 0.0));
      }
}
}  // namespace

TEST_CASE("gamma memory with μ = 1 is the tap delay line, bit for bit", "[models][gamma]") {
  GammaNet m({GammaKind::gamma, 3, 1.0});
  check_delay_line(m, 11);
}

TEST_CASE("the delay kind is the tap delay line, bit for bit, with no μ to learn", "[models][gamma]") {
  GammaNet m({GammaKind::delay, 3, 0.5});  // μ's initial value is not used
  check_delay_line(m, 12);
  for (const auto& p : m.params()) CHECK(p->name.find("mu_logit") == std::string::npos);
  CHECK(gamma_kind("delay") == GammaKind::delay);
  CHECK(std::string(gamma_kind_name(GammaKind::delay)) == "delay");
}

TEST_CASE("gamma memory with K = 1 is the context unit, by hand", "[models][gamma]") {
  // G_1(n) = 0.7 G_1(n−1) + 0.3 x(n−1), x = 1, 2, −1, 4: G_1 = 0, 0.3, 0.81, 0.267.
  GammaNet m({GammaKind::gamma, 1, 0.3}, 1, 1);
  std::vector<Tensor> xs;
  for (double v : {1.0, 2.0, -1.0, 4.0}) {
    xs.emplace_back(DType::f64, matrices(1, 1, 1));
    xs.back().set(0, v);
  }
  const auto taps = taps_over(m, xs);
  const double want[] = {0, 0.3, 0.81, 0.267};
  for (int n = 0; n < 4; ++n) {
    INFO("step " << n);
    CHECK(taps[n][0].get(0) == xs[n].get(0));
    CHECK(taps[n][1].get(0) == Approx(want[n]).margin(1e-15));
  }
}

TEST_CASE("gamma taps' impulse response is the gamma kernel, and the last tap's depth is K/μ", "[models][gamma]") {
  for (double mu : {0.5, 1.4}) {  // low-pass, and high-pass (an alternating kernel)
    INFO("μ = " << mu);
    const int K = 3, steps = 160;
    GammaNet m({GammaKind::gamma, K, mu}, 1, 1);
    const auto taps = taps_over(m, impulse(steps));
    double depth = 0;
    for (int n = 1; n < steps; ++n) {
      for (int k = 1; k <= K; ++k) {
        const double g = n >= k ? binomial(n - 1, k - 1) * std::pow(mu, k) * std::pow(1 - mu, n - k) : 0.0;
        INFO("n " << n << " k " << k);
        CHECK(taps[n][k].get(0) == Approx(g).margin(1e-14));
      }
      depth += n * taps[n][K].get(0);
    }
    CHECK(depth == Approx(K / mu).epsilon(1e-10));
  }
}

TEST_CASE("Laguerre memory: hand values, orthonormal taps, and μ = 1 the delay line", "[models][gamma]") {
  SECTION("by hand, μ = 0.5 (a = 0.5, c = √0.75), an impulse") {
    GammaNet m({GammaKind::laguerre, 2, 0.5}, 1, 1);
    const auto taps = taps_over(m, impulse(3));
    const double a = 0.5, c = std::sqrt(0.75);
    // L_1 = 0, c, a c;  L_2(n) = a L_2(n−1) + L_1(n−1) − a L_1(n): 0, −a c, −a²c + c − a²c.
    const double l1[] = {0, c, a * c}, l2[] = {0, -a * c, c * (1 - 2 * a * a)};
    for (int n = 0; n < 3; ++n) {
      INFO("step " << n);
      CHECK(taps[n][1].get(0) == Approx(l1[n]).margin(1e-15));
      CHECK(taps[n][2].get(0) == Approx(l2[n]).margin(1e-15));
    }
  }
  SECTION("impulse responses orthonormal") {
    for (double mu : {0.4, 1.3}) {
      INFO("μ = " << mu);
      const int K = 4, steps = 400;
      GammaNet m({GammaKind::laguerre, K, mu}, 1, 1);
      const auto taps = taps_over(m, impulse(steps));
      for (int j = 1; j <= K; ++j)
        for (int k = 1; k <= K; ++k) {
          double dot = 0;
          for (int n = 0; n < steps; ++n) dot += taps[n][j].get(0) * taps[n][k].get(0);
          INFO("taps " << j << ", " << k);
          CHECK(dot == Approx(j == k ? 1.0 : 0.0).margin(1e-10));
        }
    }
  }
  SECTION("μ = 1") {
    GammaNet m({GammaKind::laguerre, 3, 1.0});
    const std::vector<Tensor> xs = random_inputs(6, 2, 2, 3, 12);
    const auto taps = taps_over(m, xs);
    for (int n = 0; n < 6; ++n)
      for (int k = 0; k <= 3; ++k)
        for (std::int64_t e = 0; e < xs[0].numel(); ++e)
          CHECK(taps[n][k].get(e) == Approx(n >= k ? xs[n - k].get(e) : 0.0).margin(1e-15));
  }
}

TEST_CASE("Gamma II sections follow their transfer function's difference equation", "[models][gamma]") {
  // μ[z − a] / ([z − a]² + νμ²): y(n) = 2a y(n−1) − (a² + νμ²) y(n−2) + μ u(n−1) − μ a u(n−2), u the tap before.
  const double mu = 0.6, nu = 1.5, a = 1 - mu;  // complex poles 0.4 ± 0.735j, radius 0.837
  const int K = 3, steps = 30;
  GammaNet m({GammaKind::gamma2, K, mu, nu});
  const std::vector<Tensor> xs = random_inputs(steps, 2, 2, 3, 13);
  const auto taps = taps_over(m, xs);
  auto at = [&](int n, int k, std::int64_t e) { return n < 0 ? 0.0 : taps[n][k].get(e); };
  for (int n = 0; n < steps; ++n)
    for (int k = 1; k <= K; ++k)
      for (std::int64_t e = 0; e < xs[0].numel(); ++e) {
        const double want = 2 * a * at(n - 1, k, e) - (a * a + nu * mu * mu) * at(n - 2, k, e) +
                            mu * at(n - 1, k - 1, e) - mu * a * at(n - 2, k - 1, e);
        INFO("step " << n << " tap " << k << " element " << e);
        CHECK(at(n, k, e) == Approx(want).margin(1e-12));
      }
  SECTION("by hand: an impulse gives μ, aμ, μ(a² − νμ²) at tap 1") {
    GammaNet one({GammaKind::gamma2, 1, mu, nu}, 1, 1);
    const auto t = taps_over(one, impulse(4));
    CHECK(t[1][1].get(0) == Approx(mu).margin(1e-15));
    CHECK(t[2][1].get(0) == Approx(a * mu).margin(1e-15));
    CHECK(t[3][1].get(0) == Approx(mu * (a * a - nu * mu * mu)).margin(1e-15));
  }
}

TEST_CASE("the memory is stable for any parameter value: 0 < μ < 2 and μ(1 + ν) < 2 by construction", "[models][gamma]") {
  GammaNet m({GammaKind::gamma2, 1, 0.5, 0.5}, 1, 1);
  m.build();
  Rng rng(3);
  // |θ| ≤ 30: past θ_μ = 36.7 σ(θ_μ) rounds to 1 in float64 (gamma.hpp).
  std::vector<std::pair<double, double>> thetas = {{0, 0}, {-30, -30}, {-30, 30}, {30, -30}, {30, 30}};
  for (int k = 0; k < 200; ++k) thetas.emplace_back(rng.uniform(-30, 30), rng.uniform(-30, 30));
  for (const auto& [tm, tn] : thetas) {
    m.set("g/mem/mu_logit", tm);
    m.set("g/mem/nu_logit", tn);
    const MuWatcher w = watch_mu(m);
    INFO("θ_μ " << tm << " θ_ν " << tn << ": μ " << w.mu << ", c " << w.c << ", ω " << w.omega);
    // 0 < μ < 2; and 0 < ω < c with c² = μ(2 − μ): the poles' radius² (1 − μ)² + ω² < (1 − μ)² + c² = 1, and
    // μ(1 + ν) = μ + ω²/μ < 2 (compared through c, as the sums round to 1 and 2 when ω is near c).
    CHECK(w.mu > 0);
    CHECK(w.mu < 2);
    CHECK(w.c * w.c == Approx(w.mu * (2 - w.mu)).epsilon(1e-12).margin(1e-15));  // 2 − μ cancels near μ = 2
    CHECK(w.omega > 0);
    CHECK(w.omega < w.c);
  }
  SECTION("initial values outside the stable ranges are refused, naming the value") {
    CHECK_THROWS_WITH(gamma_mu_logit(2.0), Contains("μ") && Contains("(0, 2)") && Contains("2"));
    CHECK_THROWS_WITH(gamma_mu_logit(0.0), Contains("(0, 2)"));
    CHECK_THROWS_WITH(gamma_nu_logit(1.0, 1.0), Contains("ν") && Contains("μ(1 + ν) < 2"));
    CHECK_THROWS_AS(GammaMemory("p", "s/", 2, 2, {GammaKind::gamma2, 2, 0.5, 3.5}), Error);
    CHECK_THROWS_AS(GammaMemory("p", "s/", 2, 2, {GammaKind::gamma, 0, 0.5}), Error);
    CHECK_THROWS_WITH(gamma_kind("gama"), Contains("gama") && Contains("laguerre"));
  }
}

TEST_CASE("a focused gamma model passes gradcheck whole, μ and ν included", "[models][gamma][gradcheck]") {
  for (GammaKind kind : {GammaKind::gamma, GammaKind::laguerre, GammaKind::gamma2}) {
    SECTION(gamma_kind_name(kind)) {
      GammaNet m({kind, 2, 0.7, 0.8});
      ModelGradcheckReport report = gradcheck_model(m, random_sequence(m, 2, 5));
      INFO(report.str());
      CHECK(report.passed);
      CHECK(report.elements_checked > 0);
    }
  }
}
