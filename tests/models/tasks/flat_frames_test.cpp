// task.flatten (models/tasks/flat_frames.hpp): the same draws as the task's own, every frame and target one row.
#include <catch2/catch.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/flat_frames.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/random.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
Config task_config(const std::string& task, bool flatten) {
  Config c;
  c.set("task", "\"" + task + "\"", "test");
  c.set("task.rows", "2", "test");
  c.set("task.cols", "3", "test");
  c.set("batch", "3", "test");
  c.set("task.flatten", flatten ? "true" : "false", "test");
  return c;
}
// x [B,r,c] against its flat form f [B,1,r·c]: f(b, 0, i·c + j) = x(b, i, j) for every element.
void check_flat(const Tensor& x, const Tensor& f) {
  const Shape& s = x.shape();
  REQUIRE(f.shape() == matrices(s.batch, 1, s.rows * s.cols));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < s.rows; ++i)
      for (std::int64_t j = 0; j < s.cols; ++j) {
        INFO("b " << b << " i " << i << " j " << j);
        CHECK(f.get(f.shape().offset(b, 0, 0, i * s.cols + j)) == x.get(s.offset(b, 0, i, j)));
      }
}
}  // namespace

TEST_CASE("task.flatten: the task's own sequence, each frame and target one row of r·c", "[tasks][flatten]") {
  for (const char* name : {"repeat_copy", "copy", "recall", "priority_sort", "keep_discard"}) {
    INFO(name);
    const auto plain = make_task(task_config(name, false));
    const auto flat = make_task(task_config(name, true));
    CHECK(flat->input_rows() == 1);
    CHECK(flat->input_cols() == plain->input_rows() * plain->input_cols());
    CHECK(flat->output_rows() == 1);
    CHECK(flat->output_cols() == plain->output_rows() * plain->output_cols());
    CHECK(std::string(flat->name()) == plain->name());
    CHECK(flat->size_range() == plain->size_range());
    Rng r1(7), r2(7);
    Sequence a, f;
    for (int draw = 0; draw < 3; ++draw) {  // reusing the buffers, as training does
      plain->sample_into(r1, a, DType::f32);
      flat->sample_into(r2, f, DType::f32);
      REQUIRE(f.inputs.size() == a.inputs.size());
      REQUIRE(f.targets.size() == a.targets.size());
      CHECK(f.target_steps == a.target_steps);
      CHECK(f.kind == a.kind);
      for (std::size_t t = 0; t < a.inputs.size(); ++t) check_flat(a.inputs[t], f.inputs[t]);
      for (std::size_t k = 0; k < a.targets.size(); ++k) check_flat(a.targets[k], f.targets[k]);
    }
    CHECK(r1.next() == r2.next());  // the same draws
  }
}

TEST_CASE("task.flatten keeps N-grams' optimal cost, and refuses class targets naming the key", "[tasks][flatten]") {
  Config c = task_config("ngrams", true);
  c.set("task.bits", "20", "test");
  const auto flat = make_task(c);
  Rng rng(3);
  Sequence s;
  flat->sample_into(rng, s, DType::f32);
  CHECK(s.optimal_cost.size() == 3);
  CHECK(s.kind == TargetKind::probabilities);
  CHECK_THROWS_WITH(make_task(task_config("retrieval", true)), Contains("task.flatten") && Contains("retrieval"));
}

TEST_CASE("task.flatten: a vector MatNTM reads Graves' copy frames as rows", "[tasks][flatten]") {
  Config c = task_config("copy", true);
  for (const auto& [k, v] : {std::pair{"model", "\"matntm\""}, {"model.layers", "\"1x8\""}, {"ntm.controller", "\"lstm\""},
                             {"ntm.slots", "8"}, {"ntm.slot_rows", "1"}, {"ntm.slot_cols", "4"}, {"task.max_length", "3"}})
    c.set(k, v, "test");
  const auto task = make_task(c);
  auto model = make_model(c, *task, DType::f32);
  CHECK(model->input_rows() == 1);
  CHECK(model->input_cols() == 9);  // the 2x3 bits and the delimiter row, one row
  CHECK(model->params().contains("ntm/ctrl/l1/i/x/V"));
  CHECK(model->params().at("ntm/ctrl/l1/i/x/V").value.shape() == parameter(9, 8));
  CHECK(model->params().at("ntm/out/h/V").value.shape() == parameter(8, 6));  // the 2x3 target, one row
}
