// `matmem eval` on a small trained run: a table row for every size asked, in order, and the same numbers as
// CSV (to a file, or to standard output with --csv -).
#include <catch2/catch.hpp>

#include <cmath>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string& kSmall = kSmallMatNTM;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  return out;
}
// The table rows: lines whose first word is a whole number, as the first words.
std::vector<std::string> table_sizes(const std::string& output) {
  std::vector<std::string> sizes;
  for (const std::string& line : lines(output)) {
    std::stringstream ss(line);
    std::string first;
    ss >> first;
    if (!first.empty() && first.find_first_not_of("0123456789") == std::string::npos) sizes.push_back(first);
  }
  return sizes;
}

// A run trained a few steps, made once per process.
fs::path trained_run() {
  static const fs::path dir = [] {
    const fs::path d = fresh_dir("eval");
    const CommandResult r = run_matmem("train " + kSmall + " --steps 3 --out run", d);
    INFO(r.output);
    REQUIRE(r.status == 0);
    return d;
  }();
  return dir;
}
}  // namespace

TEST_CASE("eval: one table row per size asked, in order", "[tools][eval]") {
  const fs::path dir = trained_run();
  const CommandResult r = run_matmem("eval --checkpoint run --sizes 2,5,3 --batches 2", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("after 3 steps") && Contains("bits/sequence") && Contains("loss"));
  CHECK(table_sizes(r.output) == std::vector<std::string>{"2", "5", "3"});
}

// A bit task's row also has its cross-entropy in bits per sequence: for copy of length L with 2×3 target frames,
// the mean BCE (nats a target bit) × 6L / ln 2.
TEST_CASE("eval: --csv writes a header and one row of six columns per size, the cross-entropy last", "[tools][eval]") {
  const fs::path dir = trained_run();
  const CommandResult r = run_matmem("eval --checkpoint run --sizes 2,4 --batches 2 --csv eval.csv", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("xent bits"));
  const std::vector<std::string> csv = lines(read_file(dir / "eval.csv"));
  REQUIRE(csv.size() == 3);
  CHECK(fields(csv[0]) == std::vector<std::string>{"length", "bits_per_sequence", "bits_per_sequence_min",
                                                   "bits_per_sequence_max", "loss", "xent_bits"});
  for (std::size_t k = 1; k < csv.size(); ++k) {
    const std::vector<std::string> row = fields(csv[k]);
    REQUIRE(row.size() == 6);
    CHECK(row[0] == (k == 1 ? "2" : "4"));
    const double bits = std::stod(row[1]), lo = std::stod(row[2]), hi = std::stod(row[3]), loss = std::stod(row[4]);
    CHECK(lo <= bits);
    CHECK(bits <= hi);
    CHECK(loss > 0);
    const double length = std::stod(row[0]);
    CHECK(std::stod(row[5]) == Approx(loss * 6 * length / std::log(2.0)).epsilon(1e-3));
  }
  // the table still goes to the terminal, with the same sizes
  CHECK(table_sizes(r.output) == std::vector<std::string>{"2", "4"});
}

TEST_CASE("eval: --csv - prints only the CSV", "[tools][eval]") {
  const fs::path dir = trained_run();
  const CommandResult r = run_matmem("eval --checkpoint run --sizes 3 --batches 1 --csv -", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const std::vector<std::string> out = lines(r.output);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "length,bits_per_sequence,bits_per_sequence_min,bits_per_sequence_max,loss,xent_bits");
  CHECK(fields(out[1]).size() == 6);
  CHECK(fields(out[1])[0] == "3");
}

TEST_CASE("eval: bad sizes and a missing checkpoint are refused, naming them", "[tools][eval][errors]") {
  const fs::path dir = trained_run();
  const CommandResult zero = run_matmem("eval --checkpoint run --sizes 2,0", dir);
  CHECK(zero.refused());
  CHECK_THAT(zero.output, Contains("--sizes") && Contains("0 (in 2,0) is not a whole number from 1 to"));
  const CommandResult none = run_matmem("eval --checkpoint nothing_here --sizes 2", dir);
  CHECK(none.refused());
  CHECK_THAT(none.output, Contains("nothing_here"));
}

TEST_CASE("eval: --set changes the task's keys of the evaluation sequences, not a frame's shape", "[tools][eval]") {
  const fs::path dir = fresh_dir("eval_set");
  const std::string small = "--set task.rows=2 --set task.cols=2 --set task.max_length=3 --set task.max_repeats=3 "
                            "--set ntm.slots=8 --set ntm.slot_rows=2 --set ntm.slot_cols=2 --set batch=2";
  const CommandResult train = run_matmem("train --model matntm --task repeat_copy " + small + " --steps 1 --out run", dir);
  INFO(train.output);
  REQUIRE(train.status == 0);
  // Over lengths with 5 repeats (size 4: four matrices), then over repeats with 2 matrices (size 5: five repeats).
  const CommandResult by_length = run_matmem("eval --checkpoint run --sizes 4 --batches 1 --set task.fixed_size=5 --csv -", dir);
  INFO(by_length.output);
  REQUIRE(by_length.status == 0);
  CHECK_THAT(by_length.output, Contains("length,bits_per_sequence"));
  // Held at 1 repeat the sequences have 5 targets of 3×2 elements, at 5 repeats 21: a model near chance errs
  // on about half of them.
  const CommandResult once = run_matmem("eval --checkpoint run --sizes 4 --batches 1 --set task.fixed_size=1 --csv -", dir);
  auto bits = [](const std::string& out) { return std::stod(fields(lines(out).at(1)).at(1)); };
  CHECK(bits(by_length.output) > 2.5 * bits(once.output));
  const CommandResult by_repeats = run_matmem(
      "eval --checkpoint run --sizes 5 --batches 1 --set task.size_by=repeats --set task.fixed_size=2", dir);
  INFO(by_repeats.output);
  REQUIRE(by_repeats.status == 0);
  CHECK_THAT(by_repeats.output, Contains("repeats"));
  CHECK(table_sizes(by_repeats.output) == std::vector<std::string>{"5"});
  CHECK_THAT(run_matmem("eval --checkpoint run --set task.rows=3", dir).output, Contains("change shape"));
  CHECK_THAT(run_matmem("eval --checkpoint run --set lr=1", dir).output, Contains("only the task's keys"));
}

TEST_CASE("eval: the N-gram task's optimal cost is printed beside the model's", "[tools][eval]") {
  const fs::path dir = fresh_dir("eval_ngrams");
  const CommandResult train = run_matmem(
      "train --model matlstm --task ngrams --set 'model.layers=\"2x2\"' --set batch=2 --set task.bits=20 --steps 1 --out run", dir);
  INFO(train.output);
  REQUIRE(train.status == 0);
  const CommandResult r = run_matmem("eval --checkpoint run --sizes 20,40 --batches 2", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("xent bits/seq") && Contains("optimal"));
  CHECK(table_sizes(r.output) == std::vector<std::string>{"20", "40"});
  const CommandResult csv = run_matmem("eval --checkpoint run --sizes 20 --batches 1 --csv -", dir);
  CHECK_THAT(csv.output, Contains("loss,optimal"));
  // The optimal predictor's mean cost of 20 bits: 1 bit for each context's first bit, less for most after.
  const std::vector<std::string> row = fields(lines(csv.output).at(1));
  REQUIRE(row.size() == 6);
  CHECK(std::stod(row[5]) > 5);
  CHECK(std::stod(row[5]) < 25);
}

TEST_CASE("eval, inspect: a generated task's best parameters on its held-out batches, unless --last",
          "[tools][eval][held_out]") {
  const fs::path dir = fresh_dir("eval_best");
  const CommandResult train = run_matmem(
      "train " + kSmall + " --steps 12 --set eval.interval=1 --set eval.batches=2 --set lr=0.05 --out run", dir);
  INFO(train.output);
  REQUIRE(train.status == 0);
  // validation.csv: a row per evaluation, and the first lowest cost is the best written to best.safetensors.
  const std::vector<std::string> rows = lines(read_file(dir / "run" / "validation.csv"));
  REQUIRE(rows.size() == 13);
  CHECK(rows[0] == "step,loss,bits_per_sequence,best,best_step");
  std::size_t lowest = 1;
  for (std::size_t k = 1; k < rows.size(); ++k) {
    REQUIRE(fields(rows[k]).size() == 5);
    CHECK(fields(rows[k])[0] == std::to_string(k));
    if (std::stod(fields(rows[k])[2]) < std::stod(fields(rows[lowest])[2])) lowest = k;
  }
  const std::string best_step = fields(rows.back())[4];
  CHECK(best_step == std::to_string(lowest));
  REQUIRE(best_step != "12");  // the best is not the last parameters
  CHECK(matmem::read_safetensors((dir / "run" / "best.safetensors").string()).metadata.at("step") == best_step);
  CHECK_THAT(train.output, Contains("best parameters: step " + best_step));
  // eval and inspect run the best unless --last.
  const CommandResult best = run_matmem("eval --checkpoint run --sizes 3 --batches 2", dir);
  const CommandResult last = run_matmem("eval --checkpoint run --sizes 3 --batches 2 --last", dir);
  INFO(best.output << last.output);
  REQUIRE(best.status == 0);
  REQUIRE(last.status == 0);
  CHECK_THAT(best.output, Contains("the parameters of step " + best_step + " (best held-out error"));
  CHECK_THAT(last.output, Contains("the last parameters (step 12)"));
  auto csv_loss = [&](const std::string& flags) {
    return fields(lines(run_matmem("eval --checkpoint run --sizes 3 --batches 2 --csv -" + flags, dir).output).at(1)).at(4);
  };
  CHECK(csv_loss("") != csv_loss(" --last"));
  const CommandResult drawn = run_matmem("inspect --checkpoint run --out best.svg", dir);
  const CommandResult drawn_last = run_matmem("inspect --checkpoint run --out last.svg --last", dir);
  INFO(drawn.output << drawn_last.output);
  CHECK_THAT(drawn.output, Contains("the parameters of step " + best_step));
  CHECK_THAT(drawn_last.output, Contains("the last parameters (step 12)"));
}

TEST_CASE("train: eval.batches and eval.seed are listed and refused out of range, naming the key",
          "[tools][eval][held_out][errors]") {
  const fs::path dir = fresh_dir("eval_keys");
  const CommandResult help = run_matmem("train --help-config", dir);
  CHECK_THAT(help.output, Contains("eval.batches") && Contains("eval.seed"));
  const CommandResult zero = run_matmem("train " + kSmall + " --steps 1 --set eval.interval=1 --set eval.batches=0", dir);
  CHECK(zero.refused());
  CHECK_THAT(zero.output, Contains("eval.batches = 0 must be from 1 to 100000"));
  const CommandResult seed = run_matmem("train " + kSmall + " --steps 1 --set eval.seed=-3", dir);
  CHECK(seed.refused());
  CHECK_THAT(seed.output, Contains("eval.seed = -3 must be ≥ 0"));
}
