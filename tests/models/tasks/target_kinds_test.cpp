// The Unroller's loss and cost by the sequence's TargetKind (models/tasks/tasks.hpp), against numbers
// worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"

using namespace matmem;

namespace {
// Outputs fixed by hand: the bias of a mat() whose U, V are zero, [1, rows, cols], the same at every step.
class Fixed : public Model {
 public:
  Fixed(std::int64_t rows, std::int64_t cols) : Model("fixed", DType::f64, 1) { set_io(1, 1, rows, cols); }
  void step(Step& s) override { s.output(s.mat("fixed/out", {{"x", s.input()}}, output_rows(), output_cols())); }
  void set(std::initializer_list<double> values) {
    build();
    for (Parameter* p : {&params().at("fixed/out/x/U"), &params().at("fixed/out/x/V")}) p->value.fill(0.0);
    Tensor& b = params().at("fixed/out/B").value;
    std::int64_t k = 0;
    for (double v : values) b.set(k++, v);
  }
};

// A sequence of one input frame per step over a batch of B, targets [B, rows, cols] at the given steps.
Sequence sequence(TargetKind kind, std::int64_t B, std::int64_t rows, std::int64_t cols, std::int64_t steps) {
  Sequence s;
  s.kind = kind;
  for (std::int64_t t = 0; t < steps; ++t) s.add_input(DType::f64, matrices(B, 1, 1));
  return s;
}
void set(Tensor& t, std::int64_t b, std::int64_t i, std::int64_t j, double v) { t.set(t.shape().offset(b, 0, i, j), v); }
}  // namespace

TEST_CASE("classes: softmax cross-entropy per row and class errors per sequence", "[tasks][target-kinds]") {
  // Output 1x3 with logits (1, 2, 0) at both target steps; a batch of 2.
  // Step 0: sequence 0 wants class 1 (right), sequence 1 class 0 (wrong).
  // Step 1: sequence 0 wants class 2 (wrong), sequence 1 class 1 (right).
  // Errors: 2 over 2 sequences = 1 per sequence. Loss: the mean of −log softmax at the wanted classes,
  // lse − x_k with lse = log(e + e² + 1): (lse−2, lse−1, lse−0, lse−2) / 4.
  Fixed model(1, 3);
  model.set({1.0, 2.0, 0.0});
  Sequence s = sequence(TargetKind::classes, 2, 1, 3, 3);
  Tensor& t0 = s.add_target(DType::f64, matrices(2, 1, 3), 0);
  set(t0, 0, 0, 1, 1.0), set(t0, 1, 0, 0, 1.0);
  Tensor& t1 = s.add_target(DType::f64, matrices(2, 1, 3), 2);
  set(t1, 0, 0, 2, 1.0), set(t1, 1, 0, 1, 1.0);
  Tape tape(DType::f64);
  Unroller u(model, tape);
  const SequenceResult& r = u.run(s);
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + 1.0);
  CHECK(r.bits == 1.0);
  CHECK(r.loss.item() == Approx((lse - 2 + lse - 1 + lse - 0 + lse - 2) / 4).epsilon(1e-12));
}

TEST_CASE("classes: a matrix output is one class per row", "[tasks][target-kinds]") {
  // Output 2x2, logits rows (3, 1) and (0, 1); batch 1; target rows class 0 and class 0: row 2 wrong.
  // Loss: the mean over the 2 rows of softplus(x_other − x_wanted): softplus(−2), softplus(1).
  Fixed model(2, 2);
  model.set({3.0, 1.0, 0.0, 1.0});
  Sequence s = sequence(TargetKind::classes, 1, 2, 2, 1);
  Tensor& t = s.add_target(DType::f64, matrices(1, 2, 2), 0);
  set(t, 0, 0, 0, 1.0), set(t, 0, 1, 0, 1.0);
  Tape tape(DType::f64);
  Unroller u(model, tape);
  const SequenceResult& r = u.run(s);
  auto softplus = [](double x) { return std::log1p(std::exp(x)); };
  CHECK(r.bits == 1.0);
  CHECK(r.loss.item() == Approx((softplus(-2.0) + softplus(1.0)) / 2).epsilon(1e-12));
  CHECK(class_errors_per_sequence(r.logits[0].value<double>().data, t) == 1.0);
}

TEST_CASE("reals: mean squared error and normalised MSE", "[tasks][target-kinds]") {
  // Output 1x2 = (1, 3); batch 2, one target step: targets (0, 3) and (2, 5).
  // Errors 1, 0, −1, −2: Σe² = 6, MSE = 6/4. Targets' mean 2.5, Σ(t − t̄)² = 6.25+0.25+0.25+6.25 = 13.
  Fixed model(1, 2);
  model.set({1.0, 3.0});
  Sequence s = sequence(TargetKind::reals, 2, 1, 2, 1);
  Tensor& t = s.add_target(DType::f64, matrices(2, 1, 2), 0);
  set(t, 0, 0, 0, 0.0), set(t, 0, 0, 1, 3.0), set(t, 1, 0, 0, 2.0), set(t, 1, 0, 1, 5.0);
  Tape tape(DType::f64);
  Unroller u(model, tape);
  const SequenceResult& r = u.run(s);
  CHECK(r.loss.item() == Approx(6.0 / 4).epsilon(1e-12));
  CHECK(r.bits == Approx(6.0 / 13).epsilon(1e-12));
}

TEST_CASE("reals: constant targets give the plain MSE as the cost", "[tasks][target-kinds]") {
  Fixed model(1, 2);
  model.set({1.0, 3.0});
  Sequence s = sequence(TargetKind::reals, 1, 1, 2, 1);
  Tensor& t = s.add_target(DType::f64, matrices(1, 1, 2), 0);
  t.fill(2.0);
  Tape tape(DType::f64);
  Unroller u(model, tape);
  CHECK(u.run(s).bits == Approx(1.0).epsilon(1e-12));  // errors −1, 1
}

TEST_CASE("bits is the default kind, a batch slice keeps the kind, the costs are named", "[tasks][target-kinds]") {
  Sequence s;
  CHECK(s.kind == TargetKind::bits);
  s.kind = TargetKind::classes;
  s.add_input(DType::f64, matrices(4, 1, 1));
  s.add_target(DType::f64, matrices(4, 1, 2), 0);
  Sequence part;
  batch_slice(s, 1, 2, part);
  CHECK(part.kind == TargetKind::classes);
  CHECK(std::string(cost_name(TargetKind::bits)) == "bits/seq");
  CHECK(std::string(cost_name(TargetKind::classes)) == "errors/seq");
  CHECK(std::string(cost_name(TargetKind::reals)) == "nmse");
}

TEST_CASE("probabilities: the BCE as the loss, the cross-entropy in bits per sequence as the cost", "[tasks][target-kinds]") {
  // Output 1x2 with logits (0, ln 3), P(1) = (½, ¾); a batch of 2. −log₂ P(target): 1 bit for the first element
  // whatever its target; the second 2 bits for a 0 (P = ¼), log₂(4/3) for a 1.
  // Step 0: sequence 0 wants (1, 0): 1 + 2; sequence 1 (0, 1): 1 + log₂(4/3).
  // Step 1: sequence 0 wants (0, 0): 1 + 2; sequence 1 (1, 1): 1 + log₂(4/3).
  // Cost (8 + 2 log₂(4/3)) / 2; loss the mean over the 8 elements of the same in nats.
  Fixed model(1, 2);
  model.set({0.0, std::log(3.0)});
  Sequence s = sequence(TargetKind::probabilities, 2, 1, 2, 2);
  Tensor& t0 = s.add_target(DType::f64, matrices(2, 1, 2), 0);
  set(t0, 0, 0, 0, 1.0), set(t0, 1, 0, 1, 1.0);
  Tensor& t1 = s.add_target(DType::f64, matrices(2, 1, 2), 1);
  set(t1, 1, 0, 0, 1.0), set(t1, 1, 0, 1, 1.0);
  Tape tape(DType::f64);
  Unroller u(model, tape);
  const double l43 = std::log2(4.0 / 3.0), total = 8 + 2 * l43;
  const SequenceResult& r = u.run(s);
  CHECK(r.bits == Approx(total / 2).epsilon(1e-12));
  CHECK(r.loss.item() == Approx(total * std::log(2.0) / 8).epsilon(1e-12));
  CHECK(cross_entropy_bits_per_sequence(r.logits[0].value_copy(), s.targets[0]) == Approx((3 + 1 + l43) / 2).epsilon(1e-12));
  // Masked: sequence 1 has no target at step 1; the cost is over the steps left, / the 2 sequences with one.
  s.lane_mask = {1, 1, 1, 0};
  CHECK(u.run(s).bits == Approx((3 + 1 + l43 + 3) / 2).epsilon(1e-12));
  CHECK(std::string(cost_name(TargetKind::probabilities)) == "xent bits/seq");
  CHECK(std::string(target_kind_name(TargetKind::probabilities)) == "probabilities");
}
