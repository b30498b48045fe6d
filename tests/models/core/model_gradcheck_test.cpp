// gradcheck_model (models/core/model_gradcheck.hpp): a parameter the loss does not reach is reported and
// fails the check unless exempted by name, a name that exempts nothing is refused, and task_sequence cuts a
// task's batch to its last steps with the targets and lane masks in them.
#include "matmem/models/core/model_gradcheck.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// Y_t = mat(X_t, H_{t-1}), H_t = tanh(mat(X_t, H_{t-1})); and a state Z_t = tanh(mat(X_t, Z_{t-1})) that
// nothing reads: its parameters (two/…) have no gradient at all.
class TwoPaths : public Model {
 public:
  explicit TwoPaths(bool dead_path) : Model("two", DType::f64, 3), dead_path_(dead_path) {
    set_io(2, 2, 1, 2);
    declare_state({"h", parameter(2, 2)});
    declare_state({"z", parameter(2, 2)});
  }
  void step(Step& s) override {
    Var h = tanh(s.mat("two/h", {{"x", s.input()}, {"h", s.state("h")}}, 2, 2));
    s.next("h", h);
    if (dead_path_) s.next("z", tanh(s.mat("two/dead", {{"x", s.input()}, {"z", s.state("z")}}, 2, 2)));
    if (s.output_needed()) s.output(s.mat("two/out", {{"h", h}}, 1, 2));
  }

 private:
  bool dead_path_;
};

// Sequences of 4 steps, batch 2, whose one target is at step 1 with only sequence 1 counted there.
class MidTargetTask : public Task {
 public:
  const char* name() const override { return "mid_target"; }
  void sample_into(Rng& rng, Sequence& out, DType dtype) const override { sample_size_into(rng, 4, out, dtype); }
  void sample_size_into(Rng& rng, std::int64_t, Sequence& out, DType dtype) const override {
    out.reset();
    for (std::int64_t t = 0; t < 4; ++t) {
      Tensor& x = out.add_input(dtype, matrices(2, 2, 2));
      for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform(-1, 1));
    }
    out.add_target(dtype, matrices(2, 1, 2), 1).fill(1.0);
    out.lane_mask = {0, 1};
  }
  const char* size_name() const override { return "length"; }
  std::vector<std::int64_t> eval_sizes() const override { return {4}; }
  std::int64_t input_rows() const override { return 2; }
  std::int64_t input_cols() const override { return 2; }
  std::int64_t output_rows() const override { return 1; }
  std::int64_t output_cols() const override { return 2; }
  std::int64_t batch() const override { return 2; }
};
}  // namespace

TEST_CASE("gradcheck_model passes a model whose every parameter reaches the loss, with one row per parameter",
          "[models][gradcheck]") {
  TwoPaths m(false);
  const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  INFO(r.str());
  CHECK(r.passed);
  REQUIRE(r.tensors.size() == m.params().size());
  REQUIRE(r.gradients.size() == m.params().size());
  std::size_t k = 0;
  for (const auto& p : m.params()) {
    CHECK(r.tensors[k].name == p->name);
    CHECK(r.gradients[k].name == p->name);
    CHECK(r.tensors[k].elements_checked == p->value.numel());
    CHECK(r.tensors[k].failed == 0);
    CHECK_FALSE(r.gradients[k].negligible);
    ++k;
  }
  CHECK(r.negligible().empty());
}

TEST_CASE("gradcheck_model fails on a parameter the loss does not reach, unless exempted by name",
          "[models][gradcheck]") {
  TwoPaths m(true);
  const ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3));
  CHECK_FALSE(r.passed);
  CHECK(r.failures.empty());  // its gradient, 0, is right: only its size gives it away
  const std::vector<std::string> dead = {"two/dead/x/U", "two/dead/x/V", "two/dead/z/U", "two/dead/z/V", "two/dead/B"};
  CHECK(r.negligible() == dead);
  CHECK_THAT(r.str(), Contains("two/dead/B: negligible gradient, largest |dL/dθ| 0 for loss"));

  TwoPaths exempt(true);
  const ModelGradcheckReport e = gradcheck_model(exempt, random_sequence(exempt, 2, 3), {.flat = {"two/dead/"}});
  INFO(e.str());
  CHECK(e.passed);
  CHECK(e.negligible().empty());

  TwoPaths reported(true);
  const ModelGradcheckReport n = gradcheck_model(reported, random_sequence(reported, 2, 3), {.require_gradient = false});
  CHECK(n.passed);
  CHECK(n.negligible() == dead);

  TwoPaths typo(true);
  try {
    gradcheck_model(typo, random_sequence(typo, 2, 3), {.flat = {"two/deadd/"}});
    FAIL("a prefix that names no parameter was accepted");
  } catch (const Error& err) {
    CHECK_THAT(err.what(), Contains("no parameter of model two starts with two/deadd/"));
  }
}

TEST_CASE("gradcheck_model moves the parameters off their start first, and refuses float32", "[models][gradcheck]") {
  TwoPaths m(false), start(false);
  m.build();
  start.build();
  gradcheck_model(m, random_sequence(m, 2, 2), {.sigma = 0.3, .seed = 11});
  TwoPaths again(false);
  perturb_parameters(again, 0.3, 11);
  for (const auto& p : m.params()) {
    CHECK(p->value.get(0) != start.params().find(p->name)->value.get(0));
    CHECK(p->value.get(0) == again.params().find(p->name)->value.get(0));
  }

  class Float32 : public Model {
   public:
    Float32() : Model("f32", DType::f32, 1) { set_io(1, 1, 1, 1); }
    void step(Step& s) override { s.output(s.mat("f32/out", {{"x", s.input()}}, 1, 1)); }
  } f32;
  try {
    gradcheck_model(f32, random_sequence(f32, 2, 2));
    FAIL("a float32 model was checked");
  } catch (const Error& err) {
    CHECK_THAT(err.what(), Contains("model f32 holds float32 parameters"));
  }
}

TEST_CASE("task_sequence: the last steps of the task's smallest sequence, with their targets", "[models][gradcheck]") {
  const CopyTask copy({2, 2, 2, 4, 2});  // smallest length 2: 5 steps, targets at steps 3 and 4
  Rng rng(7), same(7);
  const Sequence whole = copy.sample_size(same, 2, DType::f64);
  REQUIRE(whole.inputs.size() == 5);
  const Sequence s = task_sequence(copy, 3, rng);
  REQUIRE(s.inputs.size() == 3);
  CHECK(s.inputs[0].dtype() == DType::f64);
  for (std::size_t t = 0; t < 3; ++t)
    for (std::int64_t k = 0; k < s.inputs[t].numel(); ++k) CHECK(s.inputs[t].get(k) == whole.inputs[t + 2].get(k));
  CHECK(s.target_steps == std::vector<std::int64_t>{1, 2});
  CHECK(s.targets.size() == 2);
  Rng longer_rng(7);
  CHECK(task_sequence(copy, 50, longer_rng).inputs.size() == 5);  // fewer steps than asked: all of them

  const MidTargetTask mid;
  Rng a(1), b(1);
  const Sequence cut = task_sequence(mid, 3, a);
  CHECK(cut.target_steps == std::vector<std::int64_t>{0});
  CHECK(cut.lane_mask == std::vector<float>{0, 1});
  try {
    task_sequence(mid, 2, b);
    FAIL("a sequence with no target in its last steps was accepted");
  } catch (const Error& err) {
    CHECK_THAT(err.what(), Contains("task mid_target's sequence (4 steps, its first target at step 1) has no target "
                                    "in its last 2: unroll more steps"));
  }
}
