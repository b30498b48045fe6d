#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "matmem/models/core/model.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/retrieval.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;

namespace {
// The one symbol of sequence b's frame (its hot column), as the string's character; '-' for none or several.
char symbol(const Tensor& frame, std::int64_t b) {
  std::int64_t hot = -1, count = 0;
  for (std::int64_t j = 0; j < frame.shape().cols; ++j)
    if (frame.at(b, 0, j) != 0.0) hot = j, ++count;
  if (count != 1 || frame.at(b, 0, hot) != 1.0) return '-';
  if (hot < 26) return char('a' + hot);
  if (hot < 36) return char('0' + hot - 26);
  return hot == 36 ? '?' : '-';
}
std::string text(const Sequence& s, std::int64_t b) {
  std::string out;
  for (const Tensor& x : s.inputs) out += symbol(x, b);
  return out;
}
std::int64_t target_digit(const Sequence& s, std::int64_t b) {
  std::int64_t hot = -1, count = 0;
  for (std::int64_t j = 0; j < 10; ++j)
    if (s.targets[0].at(b, 0, j) == 1.0) hot = j, ++count;
    else CHECK(s.targets[0].at(b, 0, j) == 0.0);
  CHECK(count == 1);
  return hot;
}
}  // namespace

TEST_CASE("retrieval: letter–digit pairs, ??, a key, and that key's digit as the one target", "[tasks][retrieval]") {
  RetrievalTask task({.pairs = 4, .batch = 32});
  CHECK(task.input_rows() == 1);
  CHECK(task.input_cols() == 37);
  CHECK(task.output_rows() == 1);
  CHECK(task.output_cols() == 10);
  CHECK(task.target_kind() == TargetKind::classes);
  Rng rng(7);
  const Sequence s = task.sample(rng, DType::f64);
  CHECK(s.kind == TargetKind::classes);
  REQUIRE(s.inputs.size() == 11);  // 2K + 3
  REQUIRE(s.targets.size() == 1);
  CHECK(s.target_steps[0] == 10);  // the last step
  CHECK(s.inputs[0].shape() == matrices(32, 1, 37));
  CHECK(s.targets[0].shape() == matrices(32, 1, 10));
  std::set<char> queried;
  for (std::int64_t b = 0; b < 32; ++b) {
    const std::string str = text(s, b);
    INFO(str);
    REQUIRE(str.size() == 11);
    std::set<char> keys;
    char want = '-';
    for (int k = 0; k < 4; ++k) {
      CHECK(str[2 * k] >= 'a');
      CHECK(str[2 * k] <= 'z');
      CHECK(str[2 * k + 1] >= '0');
      CHECK(str[2 * k + 1] <= '9');
      keys.insert(str[2 * k]);
      if (str[2 * k] == str[10]) want = str[2 * k + 1];
    }
    CHECK(keys.size() == 4);  // distinct keys
    CHECK(str.substr(8, 2) == "??");
    REQUIRE(want != '-');  // the query is one of the keys
    CHECK(target_digit(s, b) == want - '0');
    for (int k = 0; k < 4; ++k)
      if (str[2 * k] == str[10]) queried.insert(char('0' + k));
  }
  CHECK(queried.size() == 4);  // over 32 strings, every position is asked for
}

TEST_CASE("retrieval: the seed fixes the strings, another seed draws others", "[tasks][retrieval]") {
  RetrievalTask task({.pairs = 3, .batch = 8});
  Rng a(1), b(1), c(2);
  const Sequence x = task.sample(a, DType::f64), y = task.sample(b, DType::f64), z = task.sample(c, DType::f64);
  std::string tx, ty, tz;
  for (std::int64_t k = 0; k < 8; ++k) tx += text(x, k), ty += text(y, k), tz += text(z, k);
  CHECK(tx == ty);
  CHECK(tx != tz);
  CHECK(tx.size() == 8 * 9);
}

TEST_CASE("retrieval: sized by its pairs, built from the config, bad pairs refused", "[tasks][retrieval]") {
  RetrievalTask task({.pairs = 4, .batch = 2});
  Rng rng(3);
  CHECK(task.sample_size(rng, 26, DType::f64).inputs.size() == 55);
  CHECK_THROWS_AS(task.sample_size(rng, 27, DType::f64), Error);
  CHECK_THROWS_WITH(RetrievalTask({.pairs = 0, .batch = 2}), Catch::Contains("task.pairs = 0"));
  Config c;
  c.set("task", "retrieval", "test");
  c.set("task.pairs", "5", "test");
  const auto made = make_task(c);
  CHECK(std::string(made->name()) == "retrieval");
  CHECK(std::string(made->size_name()) == "pairs");
  CHECK(made->eval_sizes() == std::vector<std::int64_t>{5});
}
