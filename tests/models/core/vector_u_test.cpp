// model.vector_u (Model::VectorU): a vector model's maps with U held at one are the maps with a learned U set
// to 1, in value and gradient, and carry no U parameter.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "matmem/models/core/model_gradcheck.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// Graves' N-grams NTM, small: a feed-forward controller of 1x6 over 1x1 frames, 8 slots of 1x3. Every map takes
// a row to a row.
Config ngrams_ntm(const std::string& vector_u) {
  Config c;
  for (const auto& [k, v] : {std::pair{"model", "\"matntm\""}, {"task", "\"ngrams\""}, {"task.bits", "8"},
                             {"model.layers", "\"1x6\""}, {"ntm.controller", "\"ff\""}, {"ntm.slots", "8"},
                             {"ntm.slot_rows", "1"}, {"ntm.slot_cols", "3"}, {"ntm.memory_init", "\"learned\""},
                             {"batch", "2"}})
    c.set(k, v, "test");
  c.set("model.vector_u", "\"" + vector_u + "\"", "test");
  return c;
}
}  // namespace

TEST_CASE("model.vector_u one: the maps of a learned U set to 1, in value and gradient, with no U parameter",
          "[models][vector_u]") {
  const Config lc = ngrams_ntm("learned"), oc = ngrams_ntm("one");
  const auto task = make_task(lc);
  auto learned = make_model(lc, *task, DType::f64);
  auto one = make_model(oc, *task, DType::f64);
  CHECK(one->vector_u() == Model::VectorU::one);
  // The learned model's every U is 1x1 here; set them to 1 and give the other model the same V and B.
  std::int64_t us = 0;
  for (auto& p : learned->params()) {
    if (!p->name.ends_with("/U")) continue;
    REQUIRE(p->value.numel() == 1);
    p->value.fill(1.0);
    ++us;
    CHECK_FALSE(one->params().contains(p->name));
  }
  CHECK(us >= 14);  // the controller's two terms, the heads' maps and the output's two terms
  CHECK(one->params().size() + std::size_t(us) == learned->params().size());
  for (auto& p : one->params()) p->value = learned->params().at(p->name).value;
  Rng rng(5);
  const Sequence seq = task_sequence(*task, 2, rng);
  double loss[2];
  int k = 0;
  for (Model* m : {learned.get(), one.get()}) {
    Tape tape(DType::f64);
    Unroller u(*m, tape);
    m->params().zero_grad();
    const Var l = u.run(seq).loss;
    loss[k++] = l.item();
    tape.backward(l);
  }
  CHECK(loss[1] == Approx(loss[0]).epsilon(1e-14));
  for (auto& p : one->params()) {
    const Tensor& want = learned->params().at(p->name).grad;
    for (std::int64_t e = 0; e < want.numel(); ++e) {
      INFO(p->name << "[" << e << "]");
      CHECK(p->grad.get(e) == Approx(want.get(e)).epsilon(1e-12).margin(1e-15));
    }
  }
}

TEST_CASE("model.vector_u one passes gradcheck, and is set before the parameters exist", "[models][vector_u][gradcheck]") {
  const Config c = ngrams_ntm("one");
  const auto task = make_task(c);
  auto m = make_model(c, *task, DType::f64);
  Rng rng(7);
  const ModelGradcheckReport r = gradcheck_model(*m, task_sequence(*task, 2, rng), {.require_gradient = false});
  INFO(r.str());
  CHECK(r.passed);
  CHECK_NOTHROW(m->set_vector_u(Model::VectorU::one));
  CHECK_THROWS_WITH(m->set_vector_u(Model::VectorU::learned), Contains("vector_u") && Contains("build"));
  Config bad = c;
  bad.set("model.vector_u", "\"fixed\"", "test");
  CHECK_THROWS_WITH(make_model(bad, *task, DType::f64), Contains("model.vector_u"));
}
