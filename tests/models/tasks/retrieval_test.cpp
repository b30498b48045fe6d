#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "matmem/models/core/model.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/retrieval.hpp"
#include "matmem/models/training/rules/best_parameters.hpp"
#include "matmem/models/training/trainer.hpp"
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

namespace {
// Every string of part `p` of the fixed data set, as text read from its frames, in the part's order.
std::vector<std::string> part_text(const FixedRetrievalTask& task, Split p) {
  std::vector<std::string> out;
  Sequence s;
  const std::int64_t n = task.split_size(p), batch = 7;  // batches that do not divide the part
  for (std::int64_t first = 0; first < n; first += batch) {
    const std::int64_t count = std::min(batch, n - first);
    task.split_batch_into(p, first, count, s, DType::f64);
    for (std::int64_t b = 0; b < count; ++b) {
      std::string str = text(s, b);
      // The target digit, checked to be the query's digit, appended after '='.
      const std::int64_t K = task.options().pairs;
      char want = '-';
      for (std::int64_t k = 0; k < K; ++k)
        if (str[std::size_t(2 * k)] == str[std::size_t(2 * K + 2)]) want = str[std::size_t(2 * k + 1)];
      CHECK(target_digit(s, b) == want - '0');
      out.push_back(str + "=" + char('0' + target_digit(s, b)));
    }
  }
  return out;
}
FixedRetrievalOptions fixed(std::uint64_t data_seed, std::uint64_t seed) {
  return {.pairs = 2, .batch = 8, .train = 50, .validation = 30, .test = 40, .data_seed = data_seed, .seed = seed};
}
}  // namespace

TEST_CASE("retrieval, fixed data: the data seed fixes the three parts, whatever the run's seed", "[tasks][retrieval]") {
  const FixedRetrievalTask a(fixed(1, 1)), b(fixed(1, 9)), c(fixed(2, 1));
  for (Split p : {Split::train, Split::validation, Split::test}) {
    INFO(split_name(p));
    const std::vector<std::string> x = part_text(a, p);
    CHECK(std::int64_t(x.size()) == a.split_size(p));
    CHECK(x == part_text(b, p));
    CHECK(x != part_text(c, p));
    for (const std::string& str : x) {
      INFO(str);
      CHECK(str.size() == 2 * 2 + 3 + 2);
      CHECK(str.substr(4, 2) == "??");
    }
  }
  // The strings are those of the generator, drawn one after another from the data set's own stream.
  std::vector<std::string> drawn;
  for (Split p : {Split::train, Split::validation, Split::test})
    for (std::int64_t i = 0; i < a.split_size(p); ++i) {
      std::string str;
      for (int t = 0; t < 7; ++t) {
        const int code = a.symbols(p, i)[t];
        str += code < 26 ? char('a' + code) : code < 36 ? char('0' + code - 26) : '?';
      }
      drawn.push_back(str + "=" + char('0' + a.digit(p, i)));
    }
  CHECK(std::vector<std::string>(drawn.begin(), drawn.begin() + 50) == part_text(a, Split::train));
  CHECK(std::vector<std::string>(drawn.begin() + 80, drawn.end()) == part_text(a, Split::test));
}

TEST_CASE("retrieval, fixed data: no string occurs twice, so the parts are disjoint", "[tasks][retrieval]") {
  // K = 1 has 26·10 = 260 distinct strings; 120 of them drawn at random would repeat some without the check.
  const FixedRetrievalTask task({.pairs = 1, .batch = 4, .train = 60, .validation = 30, .test = 30, .data_seed = 3});
  std::set<std::string> all;
  std::set<std::string> parts[3];
  for (Split p : {Split::train, Split::validation, Split::test})
    for (const std::string& str : part_text(task, p)) all.insert(str), parts[int(p)].insert(str);
  CHECK(all.size() == 120);
  CHECK(parts[0].size() == 60);
  CHECK(parts[1].size() == 30);
  CHECK(parts[2].size() == 30);
  CHECK_THROWS_WITH(FixedRetrievalTask({.pairs = 1, .batch = 4, .train = 100, .validation = 20, .test = 20}),
                    Catch::Contains("distinct strings"));
}

TEST_CASE("retrieval, fixed data: an epoch reads every training string once, each epoch in its own order",
          "[tasks][retrieval]") {
  FixedRetrievalOptions o = fixed(1, 5);
  o.train = 48;  // 6 batches of 8: the epoch reads the whole part
  const FixedRetrievalTask task(o);
  REQUIRE(task.steps_per_epoch() == 6);
  std::vector<std::string> train = part_text(task, Split::train);
  std::vector<std::string> epochs[2];
  Rng unused(0);
  Sequence s;
  for (std::int64_t step = 0; step < 12; ++step) {
    task.sample_step_into(step, unused, s, DType::f64);
    REQUIRE(s.inputs[0].shape().batch == 8);
    for (std::int64_t b = 0; b < 8; ++b) epochs[step / 6].push_back(text(s, b) + "=" + char('0' + target_digit(s, b)));
  }
  CHECK(epochs[0] != epochs[1]);
  std::sort(train.begin(), train.end());
  for (auto& e : epochs) {
    std::sort(e.begin(), e.end());
    CHECK(e == train);
  }
  // The step's batch is a function of (seed, step): read again out of order, the same strings.
  Sequence again;
  task.sample_step_into(9, unused, again, DType::f64);
  task.sample_step_into(3, unused, s, DType::f64);
  FixedRetrievalTask other(o);
  Sequence third;
  other.sample_step_into(3, unused, third, DType::f64);
  for (std::int64_t b = 0; b < 8; ++b) CHECK(text(s, b) == text(third, b));
}

TEST_CASE("retrieval, fixed data: trained by epochs, the test error is that of the best validation's parameters",
          "[tasks][retrieval][trainer]") {
  Config c;
  c.set("model", "fastweights", "test");
  c.set("task", "retrieval", "test");
  c.set("task.fixed", "true", "test");
  c.set("task.pairs", "2", "test");
  c.set("task.train_strings", "64", "test");
  c.set("task.validation_strings", "30", "test");
  c.set("task.test_strings", "40", "test");
  c.set("model.layers", "1x8", "test");
  c.set("batch", "8", "test");
  c.set("optimizer", "adam", "test");
  c.set("lr", "0.03", "test");
  c.set("epochs", "4", "test");
  c.set("eval.interval", "2", "test");
  c.set("eval.batch", "16", "test");
  c.set("eval.metric", "loss", "test");
  Trainer t(c);
  REQUIRE(t.split_task() != nullptr);
  CHECK(t.steps_total() == 4 * 8);
  std::vector<double> losses, tests;
  std::vector<std::vector<Tensor>> params;
  while (t.steps_done() < t.steps_total()) {
    t.step();
    if (!t.evaluated()) continue;
    CHECK(t.last_validation().count == 30);
    losses.push_back(t.last_validation().loss);
    params.emplace_back();
    for (const auto& p : t.model().params()) params.back().push_back(p->value);
  }
  const std::size_t argmin = std::size_t(std::min_element(losses.begin(), losses.end()) - losses.begin());
  INFO("validation losses " << Catch::Detail::stringify(losses));
  REQUIRE(argmin + 1 < losses.size());  // the best is not the last
  const SplitResult last = t.evaluate(Split::test);
  REQUIRE(restore_best(t));
  const SplitResult best = t.evaluate(Split::test);
  // The best evaluation's parameters as the test kept them, put into the model.
  for (std::size_t i = 0; i < params[argmin].size(); ++i) t.model().params()[i].value = params[argmin][i];
  const SplitResult kept = t.evaluate(Split::test);
  CHECK(kept.count == 40);
  CHECK(best.loss == kept.loss);
  CHECK(best.error == kept.error);
  CHECK(best.loss != last.loss);
}

namespace {
// Frame t of sequence b, as (r+2)·c characters '0'/'1' row by row, rows separated by '|'.
std::string frame_text(const Tensor& x, std::int64_t b) {
  std::string out;
  for (std::int64_t i = 0; i < x.shape().rows; ++i) {
    if (i > 0) out += '|';
    for (std::int64_t j = 0; j < x.shape().cols; ++j) {
      const double v = x.at(b, i, j);
      out += v == 1.0 ? '1' : v == 0.0 ? '0' : '?';
    }
  }
  return out;
}
}  // namespace

TEST_CASE("matrix retrieval: key, value, …, two delimiters, a key, and its value the target, frame by frame",
          "[tasks][retrieval]") {
  const MatrixRetrievalTask task({.rows = 2, .cols = 2, .pairs = 2, .batch = 1});
  CHECK(task.input_rows() == 4);
  CHECK(task.output_rows() == 2);
  CHECK(task.target_kind() == TargetKind::bits);
  // The draws the comment of retrieval.hpp names, replayed from an Rng of the same seed: key 0's 4 bits, value
  // 0's 4, key 1's (again while equal to key 0), value 1's, then the query's index.
  Rng replay(11);
  auto bits = [&]() {
    std::string m;
    for (int k = 0; k < 4; ++k) m += char('0' + replay.uniform_int(std::uint64_t(2)));
    return m;
  };
  const std::string key0 = bits(), value0 = bits();
  std::string key1 = bits();
  while (key1 == key0) key1 = bits();
  const std::string value1 = bits();
  const std::int64_t q = replay.uniform_int(std::int64_t(0), std::int64_t(1));
  auto content = [](const std::string& m, const char* marks) {  // 2x2 content, then the two marker rows
    return m.substr(0, 2) + "|" + m.substr(2, 2) + "|" + marks;
  };
  const std::vector<std::string> want = {content(key0, "11|00"),   content(value0, "00|00"),
                                         content(key1, "11|00"),   content(value1, "00|00"),
                                         content("0000", "00|11"), content("0000", "00|11"),
                                         content(q == 0 ? key0 : key1, "11|00")};
  Rng rng(11);
  const Sequence s = task.sample(rng, DType::f64);
  REQUIRE(s.inputs.size() == 7);
  for (std::size_t t = 0; t < 7; ++t) {
    INFO("step " << t);
    CHECK(frame_text(s.inputs[t], 0) == want[t]);
  }
  REQUIRE(s.targets.size() == 1);
  CHECK(s.target_steps[0] == 6);
  const std::string value = q == 0 ? value0 : value1;
  CHECK(frame_text(s.targets[0], 0) == value.substr(0, 2) + "|" + value.substr(2, 2));
}

TEST_CASE("matrix retrieval: keys distinct within a sequence, every query one of them, sizes refused",
          "[tasks][retrieval]") {
  // 1x2 keys: 4 possible, all 4 drawn, so the rejection of a repeated key is exercised on every sequence.
  const MatrixRetrievalTask task({.rows = 1, .cols = 2, .pairs = 4, .batch = 50});
  Rng rng(3);
  const Sequence s = task.sample(rng, DType::f64);
  for (std::int64_t b = 0; b < 50; ++b) {
    std::set<std::string> keys;
    std::string query_value;
    const std::string query = frame_text(s.inputs[10], b);
    for (int k = 0; k < 4; ++k) {
      keys.insert(frame_text(s.inputs[std::size_t(2 * k)], b));
      if (frame_text(s.inputs[std::size_t(2 * k)], b) == query) query_value = frame_text(s.inputs[std::size_t(2 * k + 1)], b);
    }
    CHECK(keys.size() == 4);
    REQUIRE(!query_value.empty());
    CHECK(frame_text(s.targets[0], b) == query_value.substr(0, 2));
  }
  CHECK_THROWS_WITH(MatrixRetrievalTask({.rows = 1, .cols = 2, .pairs = 5, .batch = 1}), Catch::Contains("task.pairs = 5"));
  Config c;
  c.set("task", "matrix_retrieval", "test");
  c.set("task.rows", "3", "test");
  c.set("task.cols", "3", "test");
  const auto made = make_task(c);
  CHECK(std::string(made->name()) == "matrix_retrieval");
  CHECK(made->input_rows() == 5);
  CHECK(made->eval_sizes() == std::vector<std::int64_t>{4});
}
