#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "matmem/models/core/model_gradcheck.hpp"
#include "../reference_math.hpp"
#include "matmem/models/fastweights/fast_weights.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
FastWeightsConfig small(bool fast, std::int64_t rows, std::int64_t cols, int inner = 2,
                        FastWeightsConfig::Norm norm = FastWeightsConfig::Norm::sum) {
  FastWeightsConfig c;
  c.rows = rows, c.cols = cols, c.fast = fast, c.inner_steps = inner, c.norm = norm;
  c.lambda = 0.9, c.eta = 0.7, c.init_scale = 0.5;
  c.input_rows = 2, c.input_cols = 3, c.output_rows = 2, c.output_cols = 2;
  return c;
}
}  // namespace

TEST_CASE("fast weights and IRNN pass gradcheck whole, every parameter's gradient non-negligible", "[models][fastweights][gradcheck]") {
  using Norm = FastWeightsConfig::Norm;
  SECTION("fast weights, vector (rows = 1), LN over the sum") {
    FastWeightsRNN m(small(true, 1, 4), DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4));
    INFO(r.str());
    CHECK(r.passed);
  }
  SECTION("fast weights, matrix 2x3, LN over the sum, batch 19") {
    FastWeightsRNN m(small(true, 2, 3), DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 19, 4));
    INFO(r.str());
    CHECK(r.passed);
  }
  SECTION("fast weights, matrix 2x3, LN over the slow part (004 §7)") {
    // The fast term is not normalised here and grows as H³ through the inner loop: with η = 0.7 and two inner
    // steps the loss reaches 1e35 at the perturbed point, so a gentler η and one inner step.
    FastWeightsConfig c = small(true, 2, 3, 1, Norm::slow);
    c.eta = 0.2;
    FastWeightsRNN m(c, DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4));
    INFO(r.str());
    CHECK(r.passed);
  }
  SECTION("fast weights, no LN") {
    FastWeightsRNN m(small(true, 2, 3, 1, Norm::none), DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4));
    INFO(r.str());
    CHECK(r.passed);
  }
  SECTION("fast weights, matrix 2x3, one input term (every row a scaled copy of one code)") {
    FastWeightsConfig c = small(true, 2, 3);
    c.input_terms = 1;
    FastWeightsRNN m(c, DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4));
    INFO(r.str());
    CHECK(r.passed);
    CHECK_FALSE(m.params().contains("fastweights/slow/x1/U"));
  }
  SECTION("fast weights, matrix 2x3, three input terms, two output terms, LN over rows, both forms") {
    // (LN over rows of two elements is all but a sign, ±1, whose gradient is negligible: rows of three here.)
    for (auto form : {FastWeightsConfig::Form::sum, FastWeightsConfig::Form::matrix}) {
      FastWeightsConfig c = small(true, 2, 3);
      c.input_terms = 3, c.output_terms = 2, c.norm_rows = true, c.form = form;
      FastWeightsRNN m(c, DType::f64, 3);
      const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4));
      INFO(r.str());
      CHECK(r.passed);
      CHECK(m.params().contains("fastweights/slow/x2/V"));
      CHECK(m.params().contains("fastweights/out/h1/U"));
    }
  }
  SECTION("IRNN") {
    FastWeightsRNN m(small(false, 2, 3), DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4));
    INFO(r.str());
    CHECK(r.passed);
    CHECK(m.name() == "irnn");
  }
}

TEST_CASE("the recurrence starts as a scaled identity", "[models][fastweights]") {
  FastWeightsRNN m(small(true, 2, 3), DType::f64, 3);
  m.build();
  const Tensor& U = m.params().at("fastweights/slow/h/U").value;
  const Tensor& V = m.params().at("fastweights/slow/h/V").value;
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 2; ++j) CHECK(U.at(0, i, j) == (i == j ? 1.0 : 0.0));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 3; ++j) CHECK(V.at(0, i, j) == (i == j ? 0.5 : 0.0));
}

TEST_CASE("fast weights: the inner loop adds η Σ λ^{t−1−τ} ⟨H_τ, H⟩ H_τ, checked by hand", "[models][fastweights]") {
  // Hidden 1x2, no LN, S = 1, λ = 0.5, η = 2. Input 1x1; U_h = 1, V_h = 0 (no slow recurrence), x-term U = 1,
  // V = (1, 0), B = (0, 1): Z_t = (x_t, 1). Inputs x_0 = 1, x_1 = 3.
  // t = 0: H⁰ = ReLU(Z) = (1, 1); no past: H_0 = ReLU(Z_0) = (1, 1).
  // t = 1: Z = (3, 1), H⁰ = (3, 1); A(H⁰) = η λ⁰ ⟨H_0, H⁰⟩ H_0 = 2·4·(1, 1) = (8, 8); H_1 = ReLU((11, 9)).
  // Output Y = mat(H) with U = 1, V = I, B = 0: Y_1 = (11, 9); the MSE-free check reads the logits.
  FastWeightsConfig c;
  c.rows = 1, c.cols = 2, c.fast = true, c.inner_steps = 1, c.norm = FastWeightsConfig::Norm::none;
  c.lambda = 0.5, c.eta = 2.0, c.init_scale = 0.0;
  c.input_rows = 1, c.input_cols = 1, c.output_rows = 1, c.output_cols = 2;
  FastWeightsRNN m(c, DType::f64, 1);
  m.build();
  auto set = [&](const char* name, std::initializer_list<double> v) {
    Tensor& t = m.params().at(name).value;
    std::int64_t k = 0;
    for (double x : v) t.set(k++, x);
  };
  set("fastweights/slow/x/U", {1});
  set("fastweights/slow/x/V", {1, 0});
  set("fastweights/slow/B", {0, 1});
  set("fastweights/out/h/U", {1});
  set("fastweights/out/h/V", {1, 0, 0, 1});
  set("fastweights/out/B", {0, 0});
  Sequence s;
  s.add_input(DType::f64, matrices(1, 1, 1)).fill(1.0);
  s.add_input(DType::f64, matrices(1, 1, 1)).fill(3.0);
  s.add_input(DType::f64, matrices(1, 1, 1)).fill(0.0);
  s.add_target(DType::f64, matrices(1, 1, 2), 1);
  s.add_target(DType::f64, matrices(1, 1, 2), 2);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  const SequenceResult& r = u.run(s);
  const auto y1 = r.logits[0].value<double>(), y2 = r.logits[1].value<double>();
  CHECK(y1.data[0] == Approx(11.0));
  CHECK(y1.data[1] == Approx(9.0));
  // t = 2: Z = (0, 1), H⁰ = (0, 1); A = η(λ ⟨H_0, H⁰⟩ H_0 + ⟨H_1, H⁰⟩ H_1) = 2(0.5·1·(1, 1) + 9·(11, 9))
  //   = (1 + 198, 1 + 162) = (199, 163); H_2 = (199, 164).
  CHECK(y2.data[0] == Approx(199.0));
  CHECK(y2.data[1] == Approx(164.0));
}

TEST_CASE("fast weights: input and output maps of several terms and LN over rows, checked by hand",
          "[models][fastweights]") {
  // Hidden 2x2, S = 1, one step (no fast term yet), input 1x2 X = (3, 5). Input terms: U_x0 = (1, 0),
  // V_x0 = I puts X in row 0; U_x1 = (0, 1), V_x1 = [[0, 2], [0, 0]] puts (0, 2·3) in row 1; B = 0:
  //   Z = [[3, 5], [0, 6]].  LN over rows (gain 1, bias 0): each row (a, b) ↦ ((a − b)/|a − b|, (b − a)/|a − b|)
  //   = (−1, 1) (up to ε = 1e-5), H = ReLU = [[0, 1], [0, 1]]. (LN over the matrix would give row 0 (−0.22,
  //   0.65), row 1 (−1.53, 1.09).)
  // Output 1x1 of two terms: U_o0 = (1, 0)ᵀ, V_o0 = (0, 1)ᵀ reads H[0,1]; U_o1 = (0, 1)ᵀ, V_o1 = (0, 3)ᵀ reads
  //   3 H[1,1]; B_o = 0.5: Y = 1 + 3 + 0.5 = 4.5.
  FastWeightsConfig c;
  c.rows = 2, c.cols = 2, c.fast = true, c.inner_steps = 1, c.norm = FastWeightsConfig::Norm::sum;
  c.input_terms = 2, c.output_terms = 2, c.norm_rows = true;
  c.input_rows = 1, c.input_cols = 2, c.output_rows = 1, c.output_cols = 1;
  FastWeightsRNN m(c, DType::f64, 1);
  m.build();
  auto set = [&](const char* name, std::initializer_list<double> v) {
    Tensor& t = m.params().at(name).value;
    REQUIRE(t.shape().numel() == std::int64_t(v.size()));
    std::int64_t k = 0;
    for (double x : v) t.set(k++, x);
  };
  set("fastweights/slow/x/U", {1, 0});
  set("fastweights/slow/x/V", {1, 0, 0, 1});
  set("fastweights/slow/x1/U", {0, 1});
  set("fastweights/slow/x1/V", {0, 2, 0, 0});
  set("fastweights/out/h/U", {1, 0});
  set("fastweights/out/h/V", {0, 1});
  set("fastweights/out/h1/U", {0, 1});
  set("fastweights/out/h1/V", {0, 3});
  set("fastweights/out/B", {0.5});
  Sequence s;
  Tensor& x = s.add_input(DType::f64, matrices(1, 1, 2));
  x.set(0, 3.0), x.set(1, 5.0);
  s.add_target(DType::f64, matrices(1, 1, 1), 0);
  Tape tape(DType::f64);
  Unroller u(m, tape);
  const SequenceResult& r = u.run(s);
  CHECK(r.logits[0].value<double>().data[0] == Approx(4.5).epsilon(1e-4));
}

TEST_CASE("fastweights and irnn are registered, configured by fw.* and irnn.* keys, bad values refused", "[models][fastweights]") {
  Config c;
  c.set("task", "retrieval", "test");
  c.set("task.pairs", "2", "test");
  c.set("batch", "2", "test");
  c.set("model", "fastweights", "test");
  c.set("model.layers", "1x6", "test");
  c.set("fw.inner_steps", "2", "test");
  c.set("fw.lambda", "0.8", "test");
  auto task = make_task(c);
  auto m = make_model(c, *task, DType::f64);
  auto& fw = dynamic_cast<FastWeightsRNN&>(*m);
  CHECK(fw.config().inner_steps == 2);
  CHECK(fw.config().lambda == 0.8);
  CHECK(fw.config().cols == 6);
  CHECK(fw.config().fast);
  c.set("fw.inner_steps", "0", "--set");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.inner_steps = 0"));
  c.set("fw.inner_steps", "1", "--set");
  c.set("fw.layer_norm", "middle", "--set");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.layer_norm = \"middle\""));
  c.set("model", "irnn", "test");  // a key's range holds whichever model reads it
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.layer_norm = \"middle\""));
  c.set("fw.layer_norm", "sum", "--set");
  auto irnn = make_model(c, *task, DType::f64);
  CHECK_FALSE(dynamic_cast<FastWeightsRNN&>(*irnn).config().fast);
  CHECK(dynamic_cast<FastWeightsRNN&>(*irnn).config().init_scale == 1.0);
}

TEST_CASE("fw.input_terms is the state's rows by default and fw.output_terms 1, both and fw.layer_norm_over set by the config",
          "[models][fastweights]") {
  Config c;
  c.set("task", "retrieval", "test");
  c.set("batch", "2", "test");
  c.set("model", "fastweights", "test");
  c.set("model.layers", "5x4", "test");
  auto task = make_task(c);
  auto config = [&]() { return dynamic_cast<FastWeightsRNN&>(*make_model(c, *task, DType::f64)).config(); };
  CHECK(config().input_terms == 5);
  CHECK(config().output_terms == 1);
  CHECK_FALSE(config().norm_rows);
  c.set("model.layers", "1x8", "test");
  CHECK(config().input_terms == 1);  // the vector model keeps its one term
  c.set("fw.input_terms", "2", "test");
  c.set("fw.output_terms", "3", "test");
  c.set("fw.layer_norm_over", "rows", "test");
  CHECK(config().input_terms == 2);
  CHECK(config().output_terms == 3);
  CHECK(config().norm_rows);
  c.set("fw.output_terms", "0", "test");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.output_terms = 0"));
  c.set("fw.output_terms", "1", "test");
  c.set("fw.layer_norm_over", "columns", "test");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.layer_norm_over = \"columns\""));
}

namespace {
FastWeightsConfig learned(std::int64_t rows, std::int64_t cols, FastWeightsConfig::Form form, bool lambda = true,
                          bool eta = true) {
  FastWeightsConfig c = small(true, rows, cols);
  c.learn_lambda = lambda, c.learn_eta = eta, c.form = form;
  return c;
}
}  // namespace

TEST_CASE("fast weights with learned λ and η pass gradcheck whole, λ and η included", "[models][fastweights][gradcheck]") {
  using Form = FastWeightsConfig::Form;
  SECTION("vector, the past states' sum") {
    FastWeightsRNN m(learned(1, 4, Form::sum), DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 5));
    INFO(r.str());
    CHECK(r.passed);
    CHECK(m.params().contains("fastweights/fast/lambda_logit"));
    CHECK(m.params().contains("fastweights/fast/eta_raw"));
  }
  SECTION("matrix 2x3, the past states' sum, batch 19") {
    FastWeightsRNN m(learned(2, 3, Form::sum), DType::f64, 3);
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 19, 5));
    INFO(r.str());
    CHECK(r.passed);
  }
  SECTION("matrix 2x3, A kept as a matrix") {
    FastWeightsRNN m(learned(2, 3, Form::matrix), DType::f64, 3);
    CHECK(m.matrix_form());
    const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 5));
    INFO(r.str());
    CHECK(r.passed);
  }
  SECTION("λ learned alone, η learned alone") {
    for (bool lambda : {true, false}) {
      for (Form form : {Form::sum, Form::matrix}) {
        FastWeightsRNN m(learned(1, 3, form, lambda, !lambda), DType::f64, 3);
        const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 5));
        INFO(r.str() << " learned " << (lambda ? "λ" : "η") << (form == Form::sum ? " sum" : " matrix"));
        CHECK(r.passed);
        CHECK(m.params().contains("fastweights/fast/lambda_logit") == lambda);
        CHECK(m.params().contains("fastweights/fast/eta_raw") == !lambda);
      }
    }
  }
}

TEST_CASE("learned λ and η start at the configured values and stay in range for any parameter", "[models][fastweights]") {
  FastWeightsConfig c = learned(1, 3, FastWeightsConfig::Form::sum);
  c.lambda = 0.3, c.eta = 0.05;
  FastWeightsRNN m(c, DType::f64, 3);
  CHECK(m.learned_scalars().empty());  // before the parameters exist
  m.build();
  auto scalars = m.learned_scalars();
  REQUIRE(scalars.size() == 2);
  CHECK(scalars[0].first == "fastweights/fast/lambda");
  CHECK(scalars[0].second == Approx(0.3).epsilon(1e-12));
  CHECK(scalars[1].first == "fastweights/fast/eta");
  CHECK(scalars[1].second == Approx(0.05).epsilon(1e-12));
  for (double theta : {-700.0, -40.0, 0.0, 40.0, 700.0}) {
    m.params().at("fastweights/fast/lambda_logit").value.set(0, theta);
    m.params().at("fastweights/fast/eta_raw").value.set(0, theta);
    scalars = m.learned_scalars();
    INFO("θ = " << theta);
    CHECK(scalars[0].second >= 0.0);
    CHECK(scalars[0].second <= 1.0);
    CHECK(scalars[1].second >= 0.0);
    // and the model's own λ and η: a run at that θ stays finite
    Sequence seq = random_sequence(m, 2, 4, 7);
    Tape tape(DType::f64);
    Unroller u(m, tape);
    CHECK(std::isfinite(u.run(seq).loss.item()));
  }
}

TEST_CASE("fast weights: the matrix form and the past states' sum give the same loss and gradients", "[models][fastweights]") {
  using Form = FastWeightsConfig::Form;
  using Norm = FastWeightsConfig::Norm;
  for (Norm norm : {Norm::sum, Norm::slow, Norm::none})
    for (bool learn : {false, true}) {
      // Unnormalised, the fast term grows as H³ through the inner loop: one inner step there (as the gradcheck).
      FastWeightsConfig c = small(true, 2, 3, norm == Norm::sum ? 2 : 1, norm);
      c.eta = 0.2, c.learn_lambda = c.learn_eta = learn;
      c.form = Form::sum;
      FastWeightsRNN sum_form(c, DType::f64, 3);
      c.form = Form::matrix;
      FastWeightsRNN matrix_form(c, DType::f64, 3);
      sum_form.build(), matrix_form.build();
      perturb_parameters(sum_form, 0.3, 5);
      matrix_form.params().copy_values_from(sum_form.params());
      const Sequence seq = random_sequence(sum_form, 3, 6, 11);
      double loss_sum = 0, loss_matrix = 0;
      INFO("norm " << int(norm) << " learned " << learn);
      auto grads = [&](FastWeightsRNN& m, double& loss) {
        m.params().zero_grad();
        Tape tape(DType::f64);
        Unroller u(m, tape);
        Var l = u.run(seq).loss;
        loss = l.item();
        tape.backward(l);
        std::map<std::string, std::vector<double>> all;  // by name: the two forms make them in different orders
        for (const auto& p : m.params())
          for (std::int64_t k = 0; k < p->grad.numel(); ++k) all[p->name].push_back(p->grad.get(k));
        return all;
      };
      const auto a = grads(sum_form, loss_sum), b = grads(matrix_form, loss_matrix);
      CHECK(loss_matrix == Approx(loss_sum).epsilon(1e-12));
      REQUIRE(a.size() == b.size());
      for (const auto& [name, ga] : a) {
        INFO(name);
        REQUIRE(b.count(name) == 1);
        const std::vector<double>& gb = b.at(name);
        REQUIRE(ga.size() == gb.size());
        for (std::size_t k = 0; k < ga.size(); ++k) CHECK(gb[k] == Approx(ga[k]).epsilon(1e-9).margin(1e-12));
      }
    }
}

TEST_CASE("fw.form, fw.learn_lambda and fw.learn_eta from the config, and auto follows the cost model", "[models][fastweights]") {
  Config c;
  c.set("task", "retrieval", "test");
  c.set("task.pairs", "4", "test");  // 11 steps: 5 past states on average
  c.set("batch", "2", "test");
  c.set("model", "fastweights", "test");
  c.set("model.layers", "1x6", "test");
  auto task = make_task(c);
  auto fw = [&] { return std::unique_ptr<FastWeightsRNN>(dynamic_cast<FastWeightsRNN*>(make_model(c, *task, DType::f64).release())); };
  CHECK_FALSE(fw()->config().learn_lambda);
  CHECK_FALSE(fw()->config().learn_eta);
  CHECK(fw()->config().typical_steps == 11);
  // S = 1, t̄ = 5: matrix when 5n² + 120 < 5(2n + 90), i.e. n ≤ 9: the matrix at 6 units and 9, the sum at 10.
  CHECK(fw()->matrix_form());
  c.set("model.layers", "3x3", "test");
  CHECK(fw()->matrix_form());
  c.set("model.layers", "2x5", "test");
  CHECK_FALSE(fw()->matrix_form());
  c.set("fw.inner_steps", "3", "test");  // 3(2n² + 30) + 3n² + 90 < 15(2n + 90): n ≤ 13
  CHECK(fw()->matrix_form());
  c.set("model.layers", "1x14", "test");
  CHECK_FALSE(fw()->matrix_form());
  c.set("fw.inner_steps", "1", "test");
  c.set("model.layers", "1x6", "test");
  c.set("model.layers", "1x6", "test");
  c.set("fw.form", "matrix", "--set");
  CHECK(fw()->matrix_form());
  c.set("fw.form", "sum", "--set");
  CHECK_FALSE(fw()->matrix_form());
  c.set("fw.form", "dense", "--set");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.form = \"dense\""));
  c.set("fw.form", "auto", "--set");
  c.set("fw.learn_lambda", "true", "--set");
  c.set("fw.learn_eta", "true", "--set");
  CHECK(fw()->config().learn_lambda);
  CHECK(fw()->config().learn_eta);
  c.set("fw.lambda", "1", "--set");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.lambda = 1"));
  c.set("fw.lambda", "0.9", "--set");
  c.set("fw.eta", "0", "--set");
  CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Contains("fw.eta = 0"));
}

namespace {
using testing::ref::Mat;

// The fast-weights model's logits for sample b at every step of `seq`, from Ba et al.'s form with the fast-weight
// matrix kept explicitly over vec(H) (n = rows·cols): A_t = λ A_{t−1} + η vec(H_t) vec(H_t)ᵀ, A_{−1} = 0, and
//   Z_t = U_hᵀ H_{t−1} V_h + Σ_i U_{x,i}ᵀ X_t V_{x,i} + B,  H⁰ = ReLU(Z_t),
//   Hˢ⁺¹ = ReLU(N(Z_t + A_{t−1} Hˢ)) (LN over the sum), ReLU(N(Z_t) + A_{t−1} Hˢ) (over the slow part),
//          ReLU(Z_t + A_{t−1} Hˢ) (none),  s = 0 … S−1,   H_t = Hˢ,   Y_t = U_oᵀ H_t V_o + B_o,
// N(Z) = G ⊙ LN(Z) + Bₙ; λ = σ(θ_λ), η = softplus(θ_η) when learned.
std::vector<Mat> reference_fast_weights(const FastWeightsRNN& m, const Sequence& seq, std::int64_t b) {
  using testing::ref::param;
  using Norm = FastWeightsConfig::Norm;
  const FastWeightsConfig& c = m.config();
  const std::int64_t n = c.rows * c.cols;
  const double lambda = c.learn_lambda ? testing::ref::sigmoid(testing::ref::scalar(m, "fastweights/fast/lambda_logit")) : c.lambda;
  const double eta = c.learn_eta ? testing::ref::softplus(testing::ref::scalar(m, "fastweights/fast/eta_raw")) : c.eta;
  const Mat Uh = param(m, "fastweights/slow/h/U"), Vh = param(m, "fastweights/slow/h/V"),
            Ux = param(m, "fastweights/slow/x/U"), Vx = param(m, "fastweights/slow/x/V"), B = param(m, "fastweights/slow/B"),
            Uo = param(m, "fastweights/out/h/U"), Vo = param(m, "fastweights/out/h/V"), Bo = param(m, "fastweights/out/B");
  const bool normalised = c.norm != Norm::none;
  const Mat G = normalised ? param(m, "fastweights/ln/G") : Mat(), Bn = normalised ? param(m, "fastweights/ln/B") : Mat();
  auto N = [&](const Mat& z) { return testing::ref::hadamard(G, testing::ref::layer_norm(z)) + Bn; };
  auto vec = [&](const Mat& h) {  // H as an n × 1 column, row by row
    Mat v(n, 1);
    v.a = h.a;
    return v;
  };
  auto unvec = [&](const Mat& v) {
    Mat h(c.rows, c.cols);
    h.a = v.a;
    return h;
  };
  Mat A(n, n), h(c.rows, c.cols);
  std::vector<Mat> y;
  for (const Tensor& frame : seq.inputs) {
    const Mat x = testing::ref::frame(frame, b);
    Mat z = testing::ref::bilinear(h, Uh, Vh) + testing::ref::bilinear(x, Ux, Vx) + B;
    for (std::int64_t i = 1; i < c.input_terms; ++i) {  // Σ_i U_{x,i}ᵀ X V_{x,i}
      const std::string term = "fastweights/slow/x" + std::to_string(i);
      z = z + testing::ref::bilinear(x, param(m, term + "/U"), param(m, term + "/V"));
    }
    Mat hs = testing::ref::relu(z);
    for (int s = 0; s < c.inner_steps; ++s) {
      const Mat fast = unvec(testing::ref::matmul(A, vec(hs)));
      switch (c.norm) {
        case Norm::sum: hs = testing::ref::relu(N(z + fast)); break;
        case Norm::slow: hs = testing::ref::relu(N(z) + fast); break;
        case Norm::none: hs = testing::ref::relu(z + fast); break;
      }
    }
    h = hs;
    A = lambda * A + eta * testing::ref::matmul(vec(h), testing::ref::transpose(vec(h)));
    y.push_back(testing::ref::bilinear(h, Uo, Vo) + Bo);
  }
  return y;
}
}  // namespace

TEST_CASE("fast weights' logits equal Ba et al.'s inner loop with A kept as a matrix, every LN placement, S = 3",
          "[models][fastweights]") {
  // Six steps, three inner steps, every parameter moved off its initial value (LN's gain and bias, λ and η when
  // learned); vector (1×4) and matrix (2×3) states, both forms of the fast term, logits read at steps 0, 2, 3, 5.
  // Without LN over the sum the fast term is not normalised and grows as H³ (at η = 0.2 the LN-over-the-slow-part
  // states reach 1e105 by step 4 and then overflow): a smaller η there keeps |H| within 10.
  using Form = FastWeightsConfig::Form;
  using Norm = FastWeightsConfig::Norm;
  const char* norm_names[] = {"LN over the sum", "LN over the slow part", "no LN"};
  for (Norm norm : {Norm::sum, Norm::slow, Norm::none})
    for (std::int64_t rows : {1, 2})
      for (Form form : {Form::sum, Form::matrix})
        for (bool learn : {false, true}) {
          SECTION(std::string(norm_names[int(norm)]) + (rows == 1 ? ", vector 1x4" : ", matrix 2x3") +
                  (form == Form::sum ? ", past states' sum" : ", A as a matrix") + (learn ? ", learned λ and η" : "")) {
            FastWeightsConfig c = small(true, rows, rows == 1 ? 4 : 3, 3, norm);
            c.eta = norm == Norm::sum ? 0.2 : norm == Norm::none ? 0.02 : 0.01, c.form = form, c.learn_lambda = c.learn_eta = learn;
            FastWeightsRNN m(c, DType::f64, 3);
            m.build();
            perturb_parameters(m, 0.3, 5);
            const std::vector<int> read = {0, 2, 3, 5};
            const Sequence seq = testing::ref::frames_with_targets(m, 2, 6, read, 23);
            Tape tape(DType::f64);
            Unroller u(m, tape);
            const SequenceResult& r = u.run(seq);
            REQUIRE(r.logits.size() == read.size());
            for (std::int64_t b = 0; b < 2; ++b) {
              const std::vector<Mat> y = reference_fast_weights(m, seq, b);
              for (std::size_t k = 0; k < read.size(); ++k) {
                INFO("step " << read[k]);
                testing::ref::check_equal(r.logits[k].value_copy(), b, y[std::size_t(read[k])]);
              }
            }
          }
        }
}
