// The gamma model (models/gamma/gamma_network.hpp): gradient-checked whole in both topologies and every memory
// kind, its logits checked against the formulas computed in the test (reference_math.hpp), and built from the
// config keys by the model registry, which refuses impossible values by key.
#include "matmem/models/gamma/gamma_network.hpp"

#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/models/registry.hpp"
#include "matmem/runtime/error.hpp"

#include "matmem/models/core/model_gradcheck.hpp"
#include "../reference_math.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
GammaNetworkConfig small(GammaKind kind, GammaNetworkConfig::Placement placement,
                         std::vector<std::pair<std::int64_t, std::int64_t>> layers) {
  GammaNetworkConfig c;
  c.memory = {kind, 2, 0.7, 0.8};
  c.placement = placement;
  c.layers = std::move(layers);
  c.input_rows = 2, c.input_cols = 3, c.output_rows = 2, c.output_cols = 2;
  return c;
}

std::unique_ptr<Model> from_config(std::initializer_list<const char*> sets) {
  Config c;
  c.set("model", "gamma", "test");
  c.set("task.rows", "2", "test");
  c.set("task.cols", "3", "test");
  c.set("model.layers", "4x3", "test");
  for (const char* s : sets) c.assign(s, "--set");
  auto task = make_task(c);
  return make_model(c, *task, DType::f64);
}
}  // namespace

TEST_CASE("the gamma model passes gradcheck whole, focused and distributed, for every memory kind", "[models][gamma][gradcheck]") {
  using P = GammaNetworkConfig::Placement;
  for (GammaKind kind : {GammaKind::gamma, GammaKind::laguerre, GammaKind::gamma2}) {
    SECTION(std::string("focused ") + gamma_kind_name(kind)) {
      GammaNetwork m(small(kind, P::input, {{3, 2}, {2, 2}}), DType::f64, 3);
      const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 5));
      INFO(r.str());
      CHECK(r.passed);
    }
    SECTION(std::string("distributed ") + gamma_kind_name(kind)) {
      GammaNetwork m(small(kind, P::hidden, {{2, 3}, {3, 2}}), DType::f64, 3);
      const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 5));
      INFO(r.str());
      CHECK(r.passed);
    }
  }
  SECTION("distributed, one layer: the output reads the taps") {
    GammaNetwork m(small(GammaKind::gamma, P::hidden, {{2, 3}}), DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 5));
    INFO(r.str());
    CHECK(r.passed);
    CHECK(m.params().contains("gamma/out/t2/U"));
  }
}

TEST_CASE("matmem's registry builds the gamma model from its config keys", "[models][gamma][config]") {
  auto m = from_config({"gamma.kind=laguerre", "gamma.taps=3", "gamma.mu=0.8"});
  CHECK(m->name() == "gamma");
  // μ = 2σ(θ) starts at 0.8; the first layer reads the input and its three taps.
  CHECK(2 / (1 + std::exp(-m->params().at("gamma/mem/mu_logit").value.get(0))) == Approx(0.8).epsilon(1e-12));
  CHECK(m->params().contains("gamma/l1/t3/U"));
  CHECK_FALSE(m->params().contains("gamma/l1/t4/U"));
  CHECK_FALSE(m->params().contains("gamma/mem/nu_logit"));
  auto g2 = from_config({"gamma.kind=gamma2", "gamma.mu=0.5", "gamma.nu=2.5", "gamma.placement=hidden"});
  CHECK(g2->params().contains("gamma/mem/nu_logit"));
  CHECK(g2->params().contains("gamma/l1/x/U"));  // the memory follows the first layer
}

TEST_CASE("the gamma model's impossible settings are refused naming the key and the value", "[models][gamma][config][errors]") {
  CHECK_THROWS_WITH(from_config({"gamma.mu=2"}), Contains("gamma.mu = 2") && Contains("(0, 2)"));
  CHECK_THROWS_WITH(from_config({"gamma.mu=-0.1"}), Contains("gamma.mu = -0.1"));
  CHECK_THROWS_WITH(from_config({"gamma.taps=0"}), Contains("gamma.taps = 0"));
  CHECK_THROWS_WITH(from_config({"gamma.kind=gamma3"}), Contains("gamma.kind = \"gamma3\"") && Contains("laguerre"));
  CHECK_THROWS_WITH(from_config({"gamma.kind=gamma2", "gamma.mu=1", "gamma.nu=1"}),
                    Contains("gamma.nu = 1") && Contains("μ(1 + ν) < 2"));
  CHECK_NOTHROW(from_config({"gamma.mu=1", "gamma.nu=1"}));  // ν is only Gamma II's
  CHECK_THROWS_WITH(from_config({"gamma.placement=output"}), Contains("gamma.placement = \"output\""));
  CHECK_THROWS_WITH(from_config({"gamma.mu=\"x\""}), Contains("gamma.mu"));
}

namespace {
using testing::ref::Mat;

// The gamma family's recurrences (models/layers/gamma.hpp), on one sample's matrices, from μ = 2σ(θ_μ) and
// ν = (2/μ − 1)σ(θ_ν) read from the model's parameters.
struct ReferenceMemory {
  GammaKind kind;
  int K;
  double mu = 1, nu = 0;
  std::vector<Mat> g, q;  // the previous step's taps G_0..G_K, and Gamma II's Q_1..Q_K

  ReferenceMemory(const Model& m, const GammaConfig& c, std::int64_t rows, std::int64_t cols)
      : kind(c.kind), K(c.taps), g(std::size_t(c.taps) + 1, Mat(rows, cols)), q(std::size_t(c.taps), Mat(rows, cols)) {
    if (kind == GammaKind::delay) return;
    mu = 2 * testing::ref::sigmoid(testing::ref::scalar(m, m.name() + "/mem/mu_logit"));
    if (kind == GammaKind::gamma2) nu = (2 / mu - 1) * testing::ref::sigmoid(testing::ref::scalar(m, m.name() + "/mem/nu_logit"));
  }

  std::vector<Mat> operator()(const Mat& x) {
    const double a = 1 - mu, c = std::sqrt(mu * (2 - mu)), omega = mu * std::sqrt(nu);
    std::vector<Mat> t(std::size_t(K) + 1);
    t[0] = x;
    for (int k = 1; k <= K; ++k) switch (kind) {
        case GammaKind::gamma: t[k] = a * g[k] + mu * g[k - 1]; break;
        case GammaKind::laguerre: t[k] = k == 1 ? a * g[1] + c * g[0] : a * g[k] + g[k - 1] - a * t[k - 1]; break;
        case GammaKind::gamma2:
          t[k] = a * g[k] - omega * q[k - 1] + mu * g[k - 1];
          q[k - 1] = omega * g[k] + a * q[k - 1];
          break;
        case GammaKind::delay: t[k] = g[k - 1]; break;
      }
    g = t;
    return t;
  }
};

// tanh(Σ_z U_zᵀ Z V_z + B) (linear for the output map) over named terms, the parameters under `path`.
Mat reference_dense(const Model& m, const std::string& path, const std::vector<std::pair<std::string, Mat>>& terms,
                    bool linear = false) {
  Mat z = testing::ref::param(m, path + "/B");
  for (const auto& [name, x] : terms)
    z = z + testing::ref::bilinear(x, testing::ref::param(m, path + "/" + name + "/U"), testing::ref::param(m, path + "/" + name + "/V"));
  return linear ? z : testing::ref::tanh(z);
}

std::vector<std::pair<std::string, Mat>> tap_terms(const std::vector<Mat>& taps) {
  std::vector<std::pair<std::string, Mat>> terms;
  for (std::size_t k = 0; k < taps.size(); ++k) terms.emplace_back("t" + std::to_string(k), taps[k]);
  return terms;
}

// The gamma network's logits for sample b at every step of `seq`, by the formulas of gamma_network.hpp.
std::vector<Mat> reference_gamma_network(const GammaNetwork& m, const Sequence& seq, std::int64_t b) {
  const GammaNetworkConfig& c = m.config();
  const bool focused = c.placement == GammaNetworkConfig::Placement::input;
  const std::size_t L = c.layers.size();
  ReferenceMemory memory(m, c.memory, focused ? c.input_rows : c.layers[0].first, focused ? c.input_cols : c.layers[0].second);
  std::vector<Mat> y;
  for (const Tensor& frame : seq.inputs) {
    const Mat x = testing::ref::frame(frame, b);
    if (focused) {
      Mat h = reference_dense(m, "gamma/l1", tap_terms(memory(x)));
      for (std::size_t l = 2; l <= L; ++l) h = reference_dense(m, "gamma/l" + std::to_string(l), {{"h", h}});
      y.push_back(reference_dense(m, "gamma/out", {{"h", h}}, true));
    } else {
      const std::vector<Mat> taps = memory(reference_dense(m, "gamma/l1", {{"x", x}}));
      if (L == 1) {
        y.push_back(reference_dense(m, "gamma/out", tap_terms(taps), true));
        continue;
      }
      Mat h = reference_dense(m, "gamma/l2", tap_terms(taps));
      for (std::size_t l = 3; l <= L; ++l) h = reference_dense(m, "gamma/l" + std::to_string(l), {{"h", h}});
      y.push_back(reference_dense(m, "gamma/out", {{"h", h}}, true));
    }
  }
  return y;
}
}  // namespace

TEST_CASE("the gamma model's logits equal the formula, focused and distributed, for every memory kind", "[models][gamma]") {
  // Five steps, logits read at steps 1, 3 and 4 only: the memory must run at the steps nobody reads too.
  // Parameters moved off their initial values (μ included), two samples of different inputs.
  using P = GammaNetworkConfig::Placement;
  struct Case {
    const char* name;
    P placement;
    std::vector<std::pair<std::int64_t, std::int64_t>> layers;
  };
  const Case cases[] = {{"focused, two layers", P::input, {{3, 2}, {2, 2}}},
                        {"distributed, three layers", P::hidden, {{2, 3}, {3, 2}, {2, 2}}},
                        {"distributed, one layer: the output reads the taps", P::hidden, {{2, 3}}}};
  for (GammaKind kind : {GammaKind::gamma, GammaKind::laguerre, GammaKind::gamma2, GammaKind::delay})
    for (const Case& k : cases) {
      SECTION(std::string(k.name) + ", " + gamma_kind_name(kind)) {
        GammaNetwork m(small(kind, k.placement, k.layers), DType::f64, 3);
        m.build();
        perturb_parameters(m, 0.3, 5);
        const std::vector<int> read = {1, 3, 4};
        const Sequence seq = testing::ref::frames_with_targets(m, 2, 5, read, 17);
        Tape tape(DType::f64);
        Unroller u(m, tape);
        const SequenceResult& r = u.run(seq);
        REQUIRE(r.logits.size() == read.size());
        for (std::int64_t b = 0; b < 2; ++b) {
          const std::vector<Mat> y = reference_gamma_network(m, seq, b);
          for (std::size_t n = 0; n < read.size(); ++n) {
            INFO("step " << read[n]);
            testing::ref::check_equal(r.logits[n].value_copy(), b, y[std::size_t(read[n])]);
          }
        }
      }
    }
}
