#include "matmem/models/rnn/recurrent.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "matmem/models/core/model_gradcheck.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/training/config.hpp"

using namespace matmem;

namespace {
RecurrentConfig small(CellKind kind) {
  RecurrentConfig c;
  c.cell = kind;
  c.layers = {{3, 4}, {2, 3}};  // stacked, rectangular, of different sizes
  c.input_rows = 3;
  c.input_cols = 2;
  c.output_rows = 2;
  c.output_cols = 2;
  return c;
}
}  // namespace

TEST_CASE("MatRNN passes gradcheck unrolled 3 steps", "[models][gradcheck]") {
  RecurrentModel m(small(CellKind::rnn), DType::f64, 1);
  ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == m.params().element_count());
}

TEST_CASE("MatLSTM passes gradcheck unrolled 3 steps", "[models][gradcheck]") {
  RecurrentModel m(small(CellKind::lstm), DType::f64, 2);
  ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("MatGRU passes gradcheck unrolled 3 steps", "[models][gradcheck]") {
  RecurrentModel m(small(CellKind::gru), DType::f64, 3);
  ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("the vector RNN is the rows = 1 case of the same code", "[models][gradcheck]") {
  RecurrentConfig c;
  c.layers = {{1, 7}};
  c.input_rows = 2;  // content row + delimiter row
  c.input_cols = 3;
  c.output_rows = 1;
  c.output_cols = 3;
  RecurrentModel m(c, DType::f64, 4);
  ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("parameters are named by path and the LSTM forget bias starts at 1", "[models]") {
  RecurrentModel m(small(CellKind::lstm), DType::f32, 1);
  m.build();
  CHECK(m.params().contains("matlstm/l1/i/x/U"));
  CHECK(m.params().contains("matlstm/l2/c/h/V"));
  CHECK(m.params().contains("matlstm/out/h/U"));
  CHECK(m.params().at("matlstm/l1/f/B").value.get(0) == 1.0);
  CHECK(m.params().at("matlstm/l1/i/B").value.get(0) == 0.0);
}

TEST_CASE("the same seed builds the same parameters", "[models]") {
  RecurrentModel a(small(CellKind::gru), DType::f32, 7), b(small(CellKind::gru), DType::f32, 7),
      c(small(CellKind::gru), DType::f32, 8);
  a.build();
  b.build();
  c.build();
  const Tensor& x = a.params().at("matgru/l1/z/x/U").value;
  CHECK(x.get(0) == b.params().at("matgru/l1/z/x/U").value.get(0));
  CHECK(x.get(0) != c.params().at("matgru/l1/z/x/U").value.get(0));
}

TEST_CASE("a model refuses frames of the wrong size and names both", "[models][errors]") {
  RecurrentModel m(small(CellKind::rnn), DType::f32, 1);
  Tape tape;
  Unroller u(m, tape);
  Sequence s;
  s.inputs.push_back(Tensor(DType::f32, matrices(2, 4, 4)));
  CHECK_THROWS_WITH(u.run(s), Catch::Contains("[2,3,2]") && Catch::Contains("[2,4,4]"));
}

namespace {
// A batch of 2 sequences of `steps` random 2x3 frames, with a target at every step (so every step reads).
Sequence every_step(const Model& m, int steps, std::uint64_t seed) {
  Rng rng(seed);
  Sequence s;
  for (int t = 0; t < steps; ++t) {
    Tensor x(DType::f64, matrices(2, m.input_rows(), m.input_cols()));
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform(-1, 1));
    s.inputs.push_back(std::move(x));
    s.targets.push_back(Tensor(DType::f64, matrices(2, m.output_rows(), m.output_cols())));
    s.target_steps.push_back(t);
  }
  return s;
}
}  // namespace

TEST_CASE("with attention over the past states (A-LSTM) the recurrent models pass gradcheck unrolled 4 steps",
          "[models][gradcheck]") {
  RecurrentConfig c = small(CellKind::lstm);
  c.attention_heads = 2;
  SECTION("matrix states, stacked layers") {}
  SECTION("vector states (Ba et al.'s A-LSTM)") { c.layers = {{1, 5}}; }
  SECTION("GRU cells") { c.cell = CellKind::gru; }
  RecurrentModel m(c, DType::f64, 5);
  ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 4));
  INFO(r.str());
  CHECK(r.passed);
  CHECK(m.params().contains(m.name() + "/attend/h/U"));
  CHECK(m.params().contains(m.name() + "/out/s/V"));
}

TEST_CASE("A-LSTM: the output adds an attention read of H_0…H_t to the LSTM's, checked against its formula",
          "[models]") {
  // Two models with the same LSTM layer: `plain` (no attention) whose output map is the identity, so its
  // logits are H_t; `attending`, identity output maps for both terms, so its logits are H_t + S_t. S_t is
  // computed here from plain's H_0…H_t: q = tanh(U_qᵀ H_t V_q + B_q) (one head), a_i = softmax_i ⟨q, H_i⟩,
  // S_t = Σ_i a_i H_i. Vector states 1×3 (the A-LSTM), 12 steps (more than one 64-part stack is not needed
  // for the formula; the 70-step case below covers the stack of stacks).
  const int steps = 12;
  RecurrentConfig c;
  c.cell = CellKind::lstm;
  c.layers = {{1, 3}};
  c.input_rows = 2, c.input_cols = 3, c.output_rows = 1, c.output_cols = 3;
  RecurrentModel plain(c, DType::f64, 3);
  c.attention_heads = 1;
  RecurrentModel attending(c, DType::f64, 3);
  plain.build();
  attending.build();
  perturb_parameters(attending, 0.5, 11);
  for (const auto& p : plain.params()) p->value = attending.params().at(p->name).value;  // the same LSTM
  auto identity_out = [](Model& m, const std::string& term) {
    Tensor& u = m.params().at(m.name() + "/out/" + term + "/U").value;
    Tensor& v = m.params().at(m.name() + "/out/" + term + "/V").value;
    u.set(0, 1.0);
    for (std::int64_t k = 0; k < v.numel(); ++k) v.set(k, k % 4 == 0 ? 1.0 : 0.0);  // 3x3 identity
  };
  for (Model* m : {static_cast<Model*>(&plain), static_cast<Model*>(&attending)}) {
    identity_out(*m, "h");
    m->params().at(m->name() + "/out/B").value.fill(0.0);
  }
  identity_out(attending, "s");
  const Sequence seq = every_step(plain, steps, 21);
  Tape ta(DType::f64), tb(DType::f64);
  Unroller ua(plain, ta), ub(attending, tb);
  const SequenceResult& h = ua.run(seq);
  const SequenceResult& y = ub.run(seq);
  const Tensor& Uq = attending.params().at("matlstm/attend/h/U").value;  // 1x1
  const Tensor& Vq = attending.params().at("matlstm/attend/h/V").value;  // 3x3
  const Tensor& Bq = attending.params().at("matlstm/attend/B").value;    // 1x3
  // Element (b, 0, j) of a [2,1,3] batch is at b·3 + j.
  auto H = [&](int t, int b, int j) { return h.logits[std::size_t(t)].value<double>().data[b * 3 + j]; };
  for (int t = 0; t < steps; ++t)
    for (int b = 0; b < 2; ++b) {
      double q[3], score[64], top = -1e300, norm = 0;
      for (int j = 0; j < 3; ++j) {
        double z = Bq.get(j);
        for (int i = 0; i < 3; ++i) z += Uq.get(0) * H(t, b, i) * Vq.get(i * 3 + j);
        q[j] = std::tanh(z);
      }
      for (int i = 0; i <= t; ++i) {
        score[i] = q[0] * H(i, b, 0) + q[1] * H(i, b, 1) + q[2] * H(i, b, 2);
        top = std::max(top, score[i]);
      }
      for (int i = 0; i <= t; ++i) norm += score[i] = std::exp(score[i] - top);
      for (int j = 0; j < 3; ++j) {
        double read = 0;
        for (int i = 0; i <= t; ++i) read += score[i] / norm * H(i, b, j);
        INFO("step " << t << ", sample " << b << ", column " << j);
        CHECK(y.logits[std::size_t(t)].value<double>().data[b * 3 + j] == Approx(H(t, b, j) + read).epsilon(1e-12));
      }
    }
}

TEST_CASE("A-LSTM over more than 64 steps stacks its states in stacks of stacks, the same read", "[models]") {
  // At step 69, P = stack(stack(H_0…H_63), stack(H_64…H_69)) must read what one stack of all 70 would.
  // A query of zero (attend weights 0) weights every state equally: the read is the mean of H_0…H_69.
  RecurrentConfig c;
  c.cell = CellKind::lstm;
  c.layers = {{1, 2}};
  c.input_rows = 1, c.input_cols = 2, c.output_rows = 1, c.output_cols = 2;
  c.attention_heads = 1;
  RecurrentModel m(c, DType::f64, 4);
  m.build();
  perturb_parameters(m, 0.5, 3);
  m.params().at("matlstm/attend/h/U").value.fill(0.0);
  m.params().at("matlstm/attend/B").value.fill(0.0);
  m.params().at("matlstm/out/s/U").value.fill(0.0);
  Sequence seq = every_step(m, 70, 8);
  Tape t1(DType::f64), t2(DType::f64);
  Unroller u1(m, t1);
  const SequenceResult& without = u1.run(seq);  // logits without the read: Y_t − mat_s(S_t) with U_s = 0
  m.params().at("matlstm/out/s/U").value.fill(1.0);
  m.params().at("matlstm/out/s/V").value.fill(0.0);
  m.params().at("matlstm/out/s/V").value.set(0, 1.0);  // reads column 0 of S into output 0
  // The LSTM's H_t are needed: read them through a model whose output is H_t.
  RecurrentConfig pc = c;
  pc.attention_heads = 0;
  RecurrentModel plain(pc, DType::f64, 4);
  plain.build();
  for (const auto& p : plain.params()) p->value = m.params().at(p->name).value;
  plain.params().at("matlstm/out/h/U").value.fill(1.0);
  Tensor& v = plain.params().at("matlstm/out/h/V").value;
  v.fill(0.0), v.set(0, 1.0), v.set(3, 1.0);
  plain.params().at("matlstm/out/B").value.fill(0.0);
  Tape t3(DType::f64);
  Unroller u3(plain, t3);
  const SequenceResult& h = u3.run(seq);
  Unroller u2(m, t2);
  const SequenceResult& with = u2.run(seq);
  for (int b = 0; b < 2; ++b) {
    double mean = 0;
    for (int t = 0; t < 70; ++t) mean += h.logits[std::size_t(t)].value<double>().data[b * 2] / 70;
    CHECK(with.logits[69].value<double>().data[b * 2] - without.logits[69].value<double>().data[b * 2] ==
          Approx(mean).epsilon(1e-12));
  }
}

TEST_CASE("rnn.attention_heads configures the recurrent models' attention, bad values refused naming the key",
          "[models][errors]") {
  Config c;
  c.set("task", "retrieval", "test");
  c.set("task.pairs", "2", "test");
  c.set("batch", "2", "test");
  c.set("model", "matlstm", "test");
  c.set("model.layers", "1x6", "test");
  auto task = make_task(c);
  CHECK(dynamic_cast<RecurrentModel&>(*make_model(c, *task, DType::f64)).config().attention_heads == 0);
  c.set("rnn.attention_heads", "3", "--set");
  auto m = make_model(c, *task, DType::f64);
  CHECK(dynamic_cast<RecurrentModel&>(*m).config().attention_heads == 3);
  CHECK(m->params().at("matlstm/attend/B").value.shape().rows == 3);
  for (const char* bad : {"-1", "65"}) {
    c.set("rnn.attention_heads", bad, "--set");
    CHECK_THROWS_WITH(make_model(c, *task, DType::f64), Catch::Contains(std::string("rnn.attention_heads = ") + bad));
  }
}
