// The delayed-recall task (models/tasks/delayed_recall.hpp): its layout, its draws from the seed, its refusals.
#include <catch2/catch.hpp>

#include <set>

#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/delayed_recall.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("delay task: d + l random frames, the target at step t the frame of step t − d", "[tasks][delay]") {
  DelayedRecallTask task({.rows = 2, .cols = 3, .delay = 2, .min_length = 1, .max_length = 9, .batch = 3});
  Rng rng(4);
  const Sequence s = task.sample_size(rng, 3);
  REQUIRE(s.inputs.size() == 5);
  REQUIRE(s.targets.size() == 3);
  CHECK(s.target_steps == std::vector<std::int64_t>{2, 3, 4});
  std::set<double> values;
  for (const Tensor& f : s.inputs) {
    CHECK(f.shape() == matrices(3, 2, 3));
    for (std::int64_t k = 0; k < f.numel(); ++k) values.insert(f.get(k));
  }
  CHECK(values == std::set<double>{0.0, 1.0});
  for (std::size_t k = 0; k < 3; ++k)
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t j = 0; j < 3; ++j) {
          INFO("target " << k << " (" << b << "," << i << "," << j << ")");
          CHECK(s.targets[k].at(b, i, j) == s.inputs[k].at(b, i, j));
        }
  // Frames differ from one step to the next (18 bits each: equal by chance once in 2^18).
  for (std::size_t t = 1; t < s.inputs.size(); ++t) {
    bool same = true;
    for (std::int64_t k = 0; k < s.inputs[t].numel(); ++k) same = same && s.inputs[t].get(k) == s.inputs[t - 1].get(k);
    CHECK_FALSE(same);
  }
}

TEST_CASE("delay task: the seed gives the same sequences, reused buffers or not, over the whole length range", "[tasks][delay]") {
  DelayedRecallTask task({.rows = 2, .cols = 2, .delay = 3, .min_length = 2, .max_length = 6, .batch = 2});
  Rng a(7), b(7);
  Sequence reused;
  std::set<std::size_t> lengths;
  for (int k = 0; k < 100; ++k) {
    const Sequence fresh = task.sample(a);
    task.sample_into(b, reused);
    REQUIRE(fresh.inputs.size() == reused.inputs.size());
    CHECK(fresh.inputs.size() == fresh.targets.size() + 3);
    lengths.insert(fresh.targets.size());
    for (std::size_t t = 0; t < fresh.inputs.size(); ++t)
      for (std::int64_t e = 0; e < fresh.inputs[t].numel(); ++e) REQUIRE(fresh.inputs[t].get(e) == reused.inputs[t].get(e));
  }
  CHECK(lengths == std::set<std::size_t>{2, 3, 4, 5, 6});
}

TEST_CASE("delay task: impossible settings are refused, the config's naming the key", "[tasks][delay][errors]") {
  CHECK_THROWS_WITH(DelayedRecallTask({.delay = 0}), Contains("delay") && Contains("0"));
  CHECK_THROWS_AS(DelayedRecallTask({.min_length = 5, .max_length = 4}), Error);
  Config c;
  c.set("task", "delay", "test");
  c.set("task.delay", "0", "--set");
  CHECK_THROWS_WITH(make_task(c), Contains("task.delay = 0"));
  c.set("task.delay", "4", "--set");
  auto task = make_task(c);
  CHECK(std::string(task->name()) == "delay");
  CHECK(dynamic_cast<const DelayedRecallTask&>(*task).options().delay == 4);
}
