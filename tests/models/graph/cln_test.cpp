#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "matmem/models/core/model_gradcheck.hpp"
#include "matmem/models/graph/cln.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/graph.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/models/training/rules/early_stopping.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/runtime/error.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
// A tiny graph: 12 nodes of 2 classes, mean degree 3, 10 words as 2 × 5; training samples 2 neighbours.
GraphTask tiny_task() {
  GraphTaskOptions o;
  o.graph.nodes = 12, o.graph.classes = 2, o.graph.degree = 3.0, o.graph.homophily = 0.7;
  o.graph.words = 10, o.graph.words_per_node = 4, o.graph.topic_words = 3, o.graph.test = 3, o.graph.validation = 2;
  o.feature_rows = 2;
  o.sample = 2;
  return GraphTask(o);
}

CLNConfig tiny(const GraphTask& t, std::int64_t rows, std::int64_t cols, CLNConfig::Aggregate a, bool highway,
               CLNConfig::Embed embed = CLNConfig::Embed::dense) {
  CLNConfig c;
  c.embed = embed;
  c.rows = rows, c.cols = cols, c.height = 2, c.aggregate = a, c.heads = 3, c.highway = highway;
  c.input_rows = t.input_rows(), c.input_cols = t.input_cols(), c.output_rows = 1, c.output_cols = t.output_cols();
  return c;
}

// The whole model gradchecked in float64 on the tiny graph's training pass (sampled neighbours), at a perturbed
// point; every parameter must have a gradient of more than a negligible size.
void check_model(const CLNConfig& c) {
  const GraphTask task = tiny_task();
  CLN m(c, DType::f64, 7);
  Rng rng(3);
  const Sequence seq = task.sample(rng, DType::f64);
  REQUIRE(seq.graph);
  CHECK(seq.graph->index.size() < task.graph().neighbours.index.size());  // the sample left some out
  const ModelGradcheckReport r = gradcheck_model(m, seq);
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.elements_checked == m.params().element_count());
}
}  // namespace

TEST_CASE("CLN passes gradcheck whole on a tiny graph, every parameter's gradient non-negligible",
          "[models][graph][gradcheck]") {
  const GraphTask t = tiny_task();
  using A = CLNConfig::Aggregate;
  SECTION("CLN, mean over neighbours, matrix 2x3 states, highway") { check_model(tiny(t, 2, 3, A::mean, true)); }
  SECTION("CLN without highway gates") { check_model(tiny(t, 2, 3, A::mean, false)); }
  SECTION("vector CLN (rows = 1)") { check_model(tiny(t, 1, 4, A::mean, true)); }
  SECTION("multi-attention CLN, 3 heads, matrix 2x3 states") { check_model(tiny(t, 2, 3, A::attention, true)); }
  SECTION("multi-attention CLN, vector states") { check_model(tiny(t, 1, 4, A::attention, false)); }
  SECTION("flattened neighbours (001's vector CLN), 3 slots") {
    CLNConfig c = tiny(t, 1, 4, A::flatten, true);
    c.slots = 3;
    check_model(c);
  }
  SECTION("flattened neighbours, matrix states") {
    CLNConfig c = tiny(t, 2, 3, A::flatten, false);
    c.slots = 2;
    check_model(c);
  }
  SECTION("CLN with the matrix embedding") { check_model(tiny(t, 2, 3, A::mean, true, CLNConfig::Embed::matrix)); }
}

TEST_CASE("CLN has the parameters its header names", "[models][graph]") {
  const GraphTask t = tiny_task();
  CLN m(tiny(t, 2, 3, CLNConfig::Aggregate::attention, true), DType::f64, 7);
  m.build();
  std::set<std::string> names;
  for (const auto& p : m.params()) names.insert(p->name);
  for (const char* n : {"embed/x1/U", "embed/x2/V", "embed/B", "layer1/self/U", "layer1/neighbours/U", "layer1/neighbours/V",
                        "layer1/B", "layer1/gate/h/U", "layer2/query3/h/U", "layer2/query3/B", "out/h/V", "out/B"}) {
    INFO(n);
    CHECK(names.count(n) == 1);
  }
  CHECK(names.count("embed/x3/U") == 0);  // the dense embedding: one term per row of the state
  // The attention read is n·r × c: U of the neighbours' term maps 3·2 rows back to 2.
  for (const auto& p : m.params())
    if (p->name == "layer1/neighbours/U") CHECK(p->value.shape() == parameter(6, 2));
}

TEST_CASE("CLN outside a graph task is refused with a message", "[models][graph]") {
  const GraphTask t = tiny_task();
  CLN m(tiny(t, 2, 3, CLNConfig::Aggregate::mean, true), DType::f64, 7);
  m.build();
  Rng rng(1);
  Sequence seq = t.sample(rng, DType::f64);
  seq.graph.reset();
  Tape tape(DType::f64);
  Unroller u(m, tape);
  CHECK_THROWS_WITH(u.run(seq), Contains("graph task"));
}

TEST_CASE("cln config keys: bad values are refused naming the key", "[models][graph]") {
  auto make = [](const std::vector<std::string>& sets) {
    Config c = Config::resolve([&](Config& k) {
      k.assign("model=cln", "test");
      k.assign("task=graph", "test");
      for (const auto& s : sets) k.assign(s, "test");
    });
    auto task = make_task(c);
    return make_model(c, *task);
  };
  CHECK_THROWS_WITH(make({"cln.aggregate=max"}), Contains("cln.aggregate") && Contains("max"));
  CHECK_THROWS_WITH(make({"cln.aggregate=flatten", "cln.slots=0"}), Contains("cln.slots"));
  CHECK_THROWS_WITH(make({"cln.heads=0"}), Contains("cln.heads"));
  CHECK_THROWS_WITH(make({"cln.height=0"}), Contains("cln.height"));
  CHECK_THROWS_WITH(make({"cln.embed=sparse"}), Contains("cln.embed") && Contains("sparse"));
  CHECK_THROWS_WITH(make({"model.layers=22x2"}), Contains("model.layers") && Contains("21"));
  CHECK_THROWS_WITH(make({"model.layers=2x2,2x2"}), Contains("model.layers"));
  CHECK_THROWS_WITH(make({"micro_batch=16"}), Contains("micro_batch"));
  CHECK_THROWS_WITH(make({"task.graph.homophily=2.0"}), Contains("task.graph.homophily"));
}

TEST_CASE("graph: the preset evaluates every step by the loss, and an earlier version's checkpoint keeps its patience",
          "[models][graph]") {
  const Config c = Config::resolve([&](Config& k) {
    for (const char* s : {"model=cln", "task=graph", "task.graph.nodes=60", "task.graph.classes=2", "task.graph.words=20",
                          "task.graph.topic_words=5", "task.graph.test=10", "task.graph.validation=10",
                          "model.layers=2x2", "cln.height=1", "steps=3"})
      k.assign(s, "test");
  });
  CHECK(c.integer("eval.interval") == 1);
  CHECK(c.integer("eval.patience") == 10);
  CHECK(c.str("eval.metric") == "loss");
  Trainer t(c);
  t.step();
  CHECK(t.evaluated());
  CHECK(t.rule<EarlyStoppingRule>()->rule().best() == t.last_validation().loss);
  const auto dir = std::filesystem::temp_directory_path() / "graph-tests" / "old-checkpoint";
  std::filesystem::remove_all(dir);
  t.save(dir.string());
  // The checkpoint as an earlier version wrote it: task.graph.patience instead of the eval.* keys.
  const std::string path = (dir / "checkpoint.safetensors").string();
  TensorFile f = read_safetensors(path);
  nlohmann::json config = nlohmann::json::parse(f.metadata["config"]);
  for (const char* key : {"eval.interval", "eval.patience", "eval.metric"}) config.erase(key);
  config["task.graph.patience"] = 4;
  f.metadata["config"] = config.dump();
  write_safetensors(path, f);
  auto r = Trainer::resume(dir.string());
  CHECK(r->config().integer("eval.patience") == 4);
  CHECK(r->config().integer("eval.interval") == 1);
  CHECK(r->config().str("eval.metric") == "loss");
  CHECK_THROWS_WITH(Config::resolve([](Config& k) { k.assign("task.graph.patience=4", "--set"); }),
                    Contains("eval.patience"));
}
