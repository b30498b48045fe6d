// The gamma model (models/gamma/gamma_network.hpp): gradient-checked whole in both topologies and every memory
// kind, and built from the config keys by the model registry, which refuses impossible values by key.
#include "models/gamma/gamma_network.hpp"

#include <cmath>

#include "models/registry.hpp"
#include "runtime/error.hpp"

#include "../model_gradcheck.hpp"

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
      const GradcheckReport r = testing::gradcheck_model(m, 5, 2);
      INFO(r.str());
      CHECK(r.passed);
    }
    SECTION(std::string("distributed ") + gamma_kind_name(kind)) {
      GammaNetwork m(small(kind, P::hidden, {{2, 3}, {3, 2}}), DType::f64, 3);
      const GradcheckReport r = testing::gradcheck_model(m, 5, 2);
      INFO(r.str());
      CHECK(r.passed);
    }
  }
  SECTION("distributed, one layer: the output reads the taps") {
    GammaNetwork m(small(GammaKind::gamma, P::hidden, {{2, 3}}), DType::f64, 3);
    const GradcheckReport r = testing::gradcheck_model(m, 5, 2);
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
  CHECK_THROWS_WITH(from_config({"gamma.kind=gamma3"}), Contains("gamma.kind = gamma3") && Contains("laguerre"));
  CHECK_THROWS_WITH(from_config({"gamma.kind=gamma2", "gamma.mu=1", "gamma.nu=1"}),
                    Contains("gamma.nu = 1") && Contains("μ(1 + ν) < 2"));
  CHECK_NOTHROW(from_config({"gamma.mu=1", "gamma.nu=1"}));  // ν is only Gamma II's
  CHECK_THROWS_WITH(from_config({"gamma.placement=output"}), Contains("gamma.placement = output"));
  CHECK_THROWS_WITH(from_config({"gamma.mu=\"x\""}), Contains("gamma.mu"));
}
