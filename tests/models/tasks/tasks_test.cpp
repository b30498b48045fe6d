#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>

#include "models/tasks/tasks.hpp"
#include "runtime/error.hpp"

using namespace matmem;

TEST_CASE("copy task: frames, delimiter and targets as the spec lays them out", "[tasks]") {
  CopyTask task({.rows = 5, .cols = 5, .min_length = 1, .max_length = 20, .batch = 3});
  Rng rng(3);
  Sequence s = task.sample_size(rng, 4);
  REQUIRE(s.inputs.size() == 9);  // 2l + 1
  REQUIRE(s.targets.size() == 4);
  CHECK(s.target_steps == std::vector<std::int64_t>{5, 6, 7, 8});
  for (const Tensor& f : s.inputs) CHECK(f.shape() == matrices(3, 6, 5));
  for (std::int64_t b = 0; b < 3; ++b)
    for (std::int64_t j = 0; j < 5; ++j) {
      CHECK(s.inputs[4].at(b, 5, j) == 1.0);  // the delimiter row at step l+1
      CHECK(s.inputs[4].at(b, 0, j) == 0.0);
      CHECK(s.inputs[0].at(b, 5, j) == 0.0);
      for (std::int64_t i = 0; i < 5; ++i) {
        CHECK(s.targets[2].at(b, i, j) == s.inputs[2].at(b, i, j));  // target t is input t
        CHECK(s.inputs[6].at(b, i, j) == 0.0);                     // blank recall frames
      }
    }
}

TEST_CASE("copy task: lengths are drawn over the whole range from the seed", "[tasks]") {
  CopyTask task({.rows = 2, .cols = 3, .min_length = 1, .max_length = 5, .batch = 1});
  Rng a(9), b(9);
  std::vector<bool> seen(6, false);
  for (int k = 0; k < 200; ++k) {
    Sequence s = task.sample(a);
    Sequence t = task.sample(b);
    CHECK(s.targets.size() == t.targets.size());
    seen[s.targets.size()] = true;
  }
  for (int l = 1; l <= 5; ++l) CHECK(seen[l]);
}

TEST_CASE("associative recall: the query's successor is the target", "[tasks]") {
  RecallTask task({.rows = 5, .cols = 5, .item_matrices = 2, .min_items = 2, .max_items = 10, .batch = 2});
  Rng rng(11);
  Sequence s = task.sample_size(rng, 4);
  REQUIRE(s.inputs.size() == 4 * 3 + 2 + 2 + 2);
  REQUIRE(s.targets.size() == 2);
  CHECK(s.target_steps == std::vector<std::int64_t>{16, 17});
  CHECK(s.inputs[12].at(0, 6, 0) == 1.0);  // query delimiter row
  CHECK(s.inputs[0].at(0, 5, 0) == 1.0);   // item delimiter row
  // Find the queried item by its first matrix, then check the target is the next item.
  int found = -1;
  for (int it = 0; it < 3; ++it) {
    bool same = true;
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 5; ++j) same = same && s.inputs[it * 3 + 1].at(0, i, j) == s.inputs[13].at(0, i, j);
    if (same) found = it;
  }
  REQUIRE(found >= 0);
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 5; ++j) CHECK(s.targets[0].at(0, i, j) == s.inputs[(found + 1) * 3 + 1].at(0, i, j));
}

TEST_CASE("bit errors count wrong bits per sequence", "[tasks]") {
  Tensor logits(DType::f32, matrices(2, 1, 2)), target(DType::f32, matrices(2, 1, 2));
  logits.set(0, 3.0);    // 1, right
  logits.set(1, -1.0);   // 0, wrong (target 1)
  logits.set(2, 2.0);    // 1, wrong (target 0)
  logits.set(3, -2.0);   // 0, right
  target.set(0, 1.0);
  target.set(1, 1.0);
  CHECK(bit_errors_per_sequence(logits, target) == 1.0);  // 2 wrong bits over a batch of 2
}

TEST_CASE("impossible task settings are refused with a message", "[tasks][errors]") {
  CHECK_THROWS_WITH(CopyTask({.min_length = 5, .max_length = 2}), Catch::Contains("min_length"));
  CHECK_THROWS_WITH(RecallTask({.min_items = 1}), Catch::Contains("min_items"));
}

TEST_CASE("a batch slice holds the chosen sequences' frames and targets at the same steps", "[tasks]") {
  for (const char* name : {"copy", "recall"}) {
    INFO(name);
    std::unique_ptr<Task> task;
    if (std::string(name) == "copy")
      task = std::make_unique<CopyTask>(CopyTaskOptions{.rows = 3, .cols = 4, .batch = 5});
    else
      task = std::make_unique<RecallTask>(RecallTaskOptions{.rows = 3, .cols = 4, .batch = 5});
    Rng rng(9);
    const Sequence whole = task->sample(rng);
    Sequence part;
    for (auto [first, count] : {std::pair<std::int64_t, std::int64_t>{0, 2}, {2, 3}, {4, 1}, {0, 5}}) {
      batch_slice(whole, first, count, part);  // again into the same Sequence: its buffers are reused
      REQUIRE(part.inputs.size() == whole.inputs.size());
      REQUIRE(part.targets.size() == whole.targets.size());
      CHECK(part.target_steps == whole.target_steps);
      auto same = [&](const Tensor& p, const Tensor& w) {
        REQUIRE(p.shape() == matrices(count, w.shape().rows, w.shape().cols));
        for (std::int64_t b = 0; b < count; ++b)
          for (std::int64_t i = 0; i < w.shape().rows; ++i)
            for (std::int64_t j = 0; j < w.shape().cols; ++j) REQUIRE(p.at(b, i, j) == w.at(first + b, i, j));
      };
      for (std::size_t t = 0; t < whole.inputs.size(); ++t) same(part.inputs[t], whole.inputs[t]);
      for (std::size_t t = 0; t < whole.targets.size(); ++t) same(part.targets[t], whole.targets[t]);
    }
  }
  Sequence part;
  Rng rng(1);
  const Sequence whole = CopyTask({.rows = 2, .cols = 2, .batch = 3}).sample(rng);
  CHECK_THROWS_WITH(batch_slice(whole, 2, 2, part), Catch::Matchers::Contains("sequences 2..3 of frames [3,3,2]"));
}
