// `matmem gradcheck`: the library's checks of an op (op_checks(): sizes, applied once and twice) at the sizes a
// user asks for, and a failing op fails the command; `gradcheck --model`: a whole model checked, one row per
// parameter, its op kinds applied twice, and a wrong backward named.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/models/registry.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;

namespace {
// The element counts of the table rows for `op` at `size` applied `uses` ("once", "twice") whose result is
// `result`, in the command's output (one per row).
std::vector<long> rows(const std::string& output, const std::string& op, const std::string& size,
                       const std::string& uses = "once", const std::string& result = "pass") {
  std::vector<long> elements;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    std::string name, label, applied, outcome;
    long n = 0;
    double abs_err = 0, rel_err = 0;
    if (row >> name >> label >> applied >> n >> abs_err >> rel_err >> outcome && name == op && label == size &&
        applied == uses && outcome == result)
      elements.push_back(n);
  }
  return elements;
}

// What the library's gradcheck of `op` at `size` checks: the command must run these very samples.
long library_elements(const std::string& op, matmem::SampleSize size, matmem::Uses uses = matmem::Uses::once) {
  const matmem::OpEntry* entry = matmem::find_op(op);
  REQUIRE(entry);
  return matmem::gradcheck_op(*entry, size, 1234, uses).elements_checked;
}
}  // namespace

TEST_CASE("gradcheck checks one op as the library's checks do: three sizes, and applied twice at two",
          "[tools][gradcheck]") {
  const CommandResult r = run_matmem("gradcheck --op memory_read_write", fresh_dir("gradcheck"), 120);
  INFO(r.output);
  CHECK(r.status == 0);
  REQUIRE(matmem::op_checks().size() == 5);
  for (const matmem::OpCheck& k : matmem::op_checks()) {
    INFO(matmem::name_of(k.size) << " " << matmem::name_of(k.uses));
    CHECK(rows(r.output, "memory_read_write", matmem::name_of(k.size), matmem::name_of(k.uses)) ==
          std::vector{library_elements("memory_read_write", k.size, k.uses)});
  }
  CHECK_THAT(r.output, Contains("5 checks, 0 failed"));
}

TEST_CASE("gradcheck --size lanes checks the batch-19 samples only", "[tools][gradcheck]") {
  const CommandResult r = run_matmem("gradcheck --op cosine_similarity --size lanes", fresh_dir("gradcheck"), 120);
  INFO(r.output);
  CHECK(r.status == 0);
  using matmem::SampleSize, matmem::Uses;
  CHECK(rows(r.output, "cosine_similarity", "lanes") == std::vector{library_elements("cosine_similarity", SampleSize::lanes)});
  CHECK(rows(r.output, "cosine_similarity", "lanes", "twice") ==
        std::vector{library_elements("cosine_similarity", SampleSize::lanes, Uses::twice)});
  CHECK(rows(r.output, "cosine_similarity", "small").empty());
  CHECK_THAT(r.output, Contains("2 checks, 0 failed"));
}

// An op whose backward assigns its gradient (grad_x = …) instead of adding to it (+=) is right wherever its
// input has one use: only the check applied twice sees it, in --op, --all and --model alike.
TEST_CASE("gradcheck --op, --all and --model fail a plugin op whose backward assigns, naming the case",
          "[tools][gradcheck]") {
  const auto dir = fresh_dir("gradcheck");
  const std::string plugin = "--plugin '" TEST_PLUGIN_GRADIENT "' ";
  const CommandResult op = run_matmem(plugin + "gradcheck --op test_assigning_square", dir, 60);
  INFO(op.output);
  CHECK(op.status == 1);
  CHECK(rows(op.output, "test_assigning_square", "small").size() == 1);
  CHECK(rows(op.output, "test_assigning_square", "small", "twice", "FAIL").size() == 1);
  CHECK(rows(op.output, "test_assigning_square", "lanes", "twice", "FAIL").size() == 1);
  CHECK_THAT(op.output, Contains("test_assigning_square passes applied once and fails applied twice") &&
                            Contains("must add (+=) into each input's gradient, not assign it") &&
                            Contains("5 checks, 2 failed"));

  const CommandResult all = run_matmem(plugin + "gradcheck --all --size small", dir, 300);
  INFO(all.output);
  CHECK(all.status == 1);
  CHECK(rows(all.output, "test_assigning_square", "small", "twice", "FAIL").size() == 1);
  CHECK(rows(all.output, "tanh", "small", "twice").size() == 1);
  CHECK_THAT(all.output, Contains(", 1 failed"));

  const std::string sets = " --set task.rows=2 --set task.cols=2";
  const CommandResult model = run_matmem(plugin + "gradcheck --model test_assigning_square_rnn --task copy" + sets, dir, 60);
  INFO(model.output);
  CHECK(model.status == 1);
  CHECK_THAT(model.output, Contains("op test_assigning_square FAILS applied twice to its sample") &&
                               Contains("op kinds on its tape, each applied twice to its registry sample: 1 failed"));
}

TEST_CASE("gradcheck refuses an unknown op or size, naming it", "[tools][gradcheck]") {
  const auto dir = fresh_dir("gradcheck");
  const CommandResult op = run_matmem("gradcheck --op no_such_op", dir, 30);
  CHECK(op.refused());
  CHECK_THAT(op.output, Contains("no op named no_such_op"));
  const CommandResult size = run_matmem("gradcheck --size huge", dir, 30);
  CHECK(size.refused());
  CHECK_THAT(size.output, Contains("--size: huge not in {small,large,lanes,all}"));
}

namespace {
// The parameter rows of `gradcheck --model`'s table: name -> its result column and what follows it.
std::map<std::string, std::string> parameter_rows(const std::string& output) {
  std::map<std::string, std::string> rows;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    std::string name, shape, result;
    long elements = 0;
    double largest = 0, abs_err = 0, rel_err = 0;
    if (row >> name >> shape >> elements >> largest >> abs_err >> rel_err >> result && shape.starts_with("[")) {
      std::string rest;
      std::getline(row, rest);
      rows[name] = result + rest;
    }
  }
  return rows;
}

// The names of the parameters `matmem gradcheck --model MODEL --task TASK SETS` checks, as the library makes
// the model (float64, batch 2).
std::vector<std::string> parameter_names(const std::string& model, const std::string& task,
                                         const std::vector<std::string>& sets) {
  const matmem::Config c = matmem::Config::resolve([&](matmem::Config& k) {
    k.set_json("batch", 2, "test");
    for (const std::string& kv : sets) k.assign(kv, "test");
    k.set_json("model", model, "test");
    k.set_json("task", task, "test");
  });
  const auto t = matmem::make_task(c);
  const auto m = matmem::make_model(c, *t, matmem::DType::f64);
  std::vector<std::string> names;
  for (const auto& p : m->params()) names.push_back(p->name);
  return names;
}

std::string set_args(const std::vector<std::string>& sets) {
  std::string args;
  for (const std::string& kv : sets) args += " --set '" + kv + "'";
  return args;
}
}  // namespace

TEST_CASE("gradcheck --model checks a bundled model whole: one passing row per parameter, learned starts marked",
          "[tools][gradcheck]") {
  struct Case {
    std::string model, task;
    std::vector<std::string> sets;
  };
  const std::vector<Case> cases = {
      {"matntm", "copy", {"model.layers=\"3x3\"", "task.rows=2", "task.cols=2", "ntm.slots=3", "ntm.slot_rows=2",
                          "ntm.slot_cols=2"}},
      {"matlstm", "recall", {"model.layers=\"3x2\"", "task.rows=2", "task.cols=2", "task.item_matrices=1"}},
      {"matgru", "mackey_glass", {"model.layers=\"2x2\"", "task.min_length=3", "task.max_length=3"}},
  };
  for (const Case& k : cases) {
    SECTION(k.model + " on " + k.task) {
      const CommandResult r =
          run_matmem("gradcheck --model " + k.model + " --task " + k.task + set_args(k.sets), fresh_dir("gradcheck"), 120);
      INFO(r.output);
      CHECK(r.status == 0);
      const auto rows = parameter_rows(r.output);
      const std::vector<std::string> names = parameter_names(k.model, k.task, k.sets);
      CHECK(rows.size() == names.size());
      for (const std::string& name : names) {
        INFO(name);
        REQUIRE(rows.count(name));
        CHECK(rows.at(name).starts_with("pass"));
        CHECK((rows.at(name).find("(learned start)") != std::string::npos) == (name.find("/init/") != std::string::npos));
      }
      CHECK_THAT(r.output, Contains(std::to_string(names.size()) + " parameters, 0 failed"));
      CHECK_THAT(r.output, Contains("batch 2, float64"));
    }
  }
}

TEST_CASE("gradcheck --model checks a plugin's model, and fails on a wrong backward, naming the op", "[tools][gradcheck]") {
  const auto dir = fresh_dir("gradcheck");
  const std::string plugin = "--plugin '" TEST_PLUGIN_GRADIENT "' ";
  const std::string sets = " --set task.rows=2 --set task.cols=2";
  const CommandResult right = run_matmem(plugin + "gradcheck --model test_square_rnn --task copy" + sets, dir, 60);
  INFO(right.output);
  CHECK(right.status == 0);
  CHECK(parameter_rows(right.output).at("square_rnn/init/h").starts_with("pass (learned start)"));
  CHECK_THAT(right.output, Contains("parameters, 0 failed"));
  CHECK_THAT(right.output, Contains("each applied twice to its registry sample: 0 failed (1 not registered, so not "
                                    "checked alone: test_square)"));

  // The same model with test_wrong_square's backward (3x for 2x): the parameters before the square fail, those
  // after it do not, and the first op whose own gradient fails is named.
  const CommandResult wrong = run_matmem(plugin + "gradcheck --model test_wrong_square_rnn --task copy" + sets, dir, 60);
  INFO(wrong.output);
  CHECK(wrong.status == 1);
  const auto rows = parameter_rows(wrong.output);
  CHECK(rows.at("square_rnn/cell/x/U").starts_with("FAIL"));
  CHECK(rows.at("square_rnn/init/h").starts_with("FAIL"));
  CHECK(rows.at("square_rnn/out/B").starts_with("pass"));
  CHECK_THAT(wrong.output, Contains("first op whose own gradient fails: op test_wrong_square (node "));
  CHECK_THAT(wrong.output, !Contains("parameters, 0 failed"));
}

TEST_CASE("gradcheck --model refuses a float32-only model, an unknown model and steps it cannot unroll",
          "[tools][gradcheck]") {
  const auto dir = fresh_dir("gradcheck");
  const std::pair<std::string, std::string> refusals[] = {
      {"--plugin '" TEST_PLUGIN_GOOD "' gradcheck --model test_plugin_rnn",
       "gradcheck --model test_plugin_rnn: its factory made float32 parameters when asked for float64"},
      {"gradcheck --model no_such_model", "unknown model no_such_model (known: "},
      {"gradcheck --model matrnn --steps 0", "--steps: 0 is out of range"},
      {"gradcheck --model matrnn --op tanh", "--op excludes --model"},
      {"gradcheck --task copy", "--task requires --model"},
  };
  for (const auto& [args, message] : refusals) {
    const CommandResult r = run_matmem(args, dir, 30);
    INFO(args << "\n" << r.output);
    CHECK(r.refused());
    CHECK_THAT(r.output, Contains(message));
  }
}
