// `matmem train` never overwrites an earlier run: the default directory gets a fresh name, an explicit
// --out holding a run is refused (unless --overwrite), and --resume continues a run in its own directory.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kSmall = kSmallMatNTM + " --set log_every=1";

std::string train(const std::string& args) { return "train " + kSmall + " --json " + args; }

// The files of a run and their bytes.
std::string run_contents(const fs::path& dir) {
  return read_file(dir / "config.json") + "\n--\n" + read_file(dir / "metrics.csv") + "\n--\n" +
         read_file(dir / "checkpoint.safetensors");
}
}  // namespace

TEST_CASE("train: a second run with the default directory goes to a new one and leaves the first intact",
          "[tools][train]") {
  const fs::path dir = fresh_dir("default_dir");
  const CommandResult first = run_matmem(train("--steps 3"), dir);
  REQUIRE(first.status == 0);
  const fs::path run1 = dir / "runs/matntm-copy-seed1";
  REQUIRE(fs::exists(run1 / "checkpoint.safetensors"));
  const std::string before = run_contents(run1);

  const CommandResult second = run_matmem(train("--steps 4"), dir);
  REQUIRE(second.status == 0);
  const fs::path run2 = dir / "runs/matntm-copy-seed1-2";
  CHECK(fs::exists(run2 / "checkpoint.safetensors"));
  CHECK(fs::exists(run2 / "metrics.csv"));
  CHECK(run_contents(run1) == before);

  const CommandResult third = run_matmem(train("--steps 2"), dir);
  REQUIRE(third.status == 0);
  CHECK(fs::exists(dir / "runs/matntm-copy-seed1-3/checkpoint.safetensors"));
  CHECK(run_contents(run1) == before);
}

TEST_CASE("train: the directory named in the message is the one written", "[tools][train]") {
  const fs::path dir = fresh_dir("message_dir");
  fs::create_directories(dir / "runs/matrnn-copy-seed7");  // taken, though empty
  const CommandResult r = run_matmem("train " + kSmall + " --model matrnn --seed 7 --steps 2", dir);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("into runs/matrnn-copy-seed7-2"));
  CHECK(fs::exists(dir / "runs/matrnn-copy-seed7-2/metrics.csv"));
}

TEST_CASE("train: the example printed at the end is of a trained size", "[tools][train]") {
  const fs::path dir = fresh_dir("example_size");
  const CommandResult r = run_matmem("train " + kSmall + " --model matrnn --steps 2", dir);  // lengths 1..3
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("example (length 3, first sequence of the batch)"));
}

TEST_CASE("train: the closing line's window is the steps the last logged mean is over", "[tools][train]") {
  const fs::path dir = fresh_dir("closing_window");
  const CommandResult r = run_matmem("train " + kSmall + " --model matrnn --steps 7 --set log_every=5 --out w", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("done: 7 steps") && Contains("; last 2 steps: loss"));
  const CommandResult whole = run_matmem("train " + kSmall + " --model matrnn --steps 3 --set log_every=50 --out v", dir);
  CHECK_THAT(whole.output, Contains("; last 3 steps: loss"));
}

TEST_CASE("train: a float64 run prints its example as a float32 one does, and eval and inspect read it",
          "[tools][train]") {
  const fs::path dir = fresh_dir("float64");
  std::string lines[2];
  for (int k = 0; k < 2; ++k) {
    const std::string out = k ? "f64" : "f32";
    const CommandResult r = run_matmem("train " + kSmall + " --model matrnn --steps 2 --set micro_batch=0 --out " +
                                       out + (k ? " --set dtype=float64" : ""), dir);
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto at = r.output.find("example (");
    REQUIRE(at != std::string::npos);
    lines[k] = r.output.substr(at, r.output.find("bits wrong", at) - at);
  }
  // The same start and batches: after two steps the outputs' signs are float32's (a row of #s and .s each).
  CHECK(lines[1] == lines[0]);
  const CommandResult e = run_matmem("eval --checkpoint f64 --batches 1", dir);
  INFO(e.output);
  CHECK(e.status == 0);
  const CommandResult i = run_matmem("inspect --checkpoint f64 --out f64/inspect.png", dir);
  INFO(i.output);
  CHECK(i.status == 0);
}

TEST_CASE("train: --out onto a directory holding a run is refused, names what is there and loses nothing",
          "[tools][train]") {
  const fs::path dir = fresh_dir("out_refused");
  REQUIRE(run_matmem(train("--steps 3 --out mine"), dir).status == 0);
  const std::string before = run_contents(dir / "mine");

  const CommandResult again = run_matmem(train("--steps 5 --out mine"), dir);
  CHECK(again.refused());
  CHECK_THAT(again.output, Contains("--out mine: holds a run already") && Contains("checkpoint.safetensors") &&
                               Contains("metrics.csv") && Contains("config.json") &&
                               Contains("matmem train --resume mine") && Contains("--overwrite"));
  CHECK(run_contents(dir / "mine") == before);

  // One file of a run is enough to refuse.
  fs::create_directories(dir / "partial");
  fs::copy_file(dir / "mine/metrics.csv", dir / "partial/metrics.csv");
  const CommandResult partial = run_matmem(train("--steps 2 --out partial"), dir);
  CHECK(partial.refused());
  CHECK_THAT(partial.output, Contains("--out partial: holds a run already (metrics.csv)"));

  // A directory holding other files is not a run.
  fs::create_directories(dir / "notes");
  { std::ofstream(dir / "notes/README.txt") << "plans\n"; }
  CHECK(run_matmem(train("--steps 2 --out notes"), dir).status == 0);
  CHECK(read_file(dir / "notes/README.txt") == "plans\n");
}

TEST_CASE("train: --overwrite replaces the run in --out", "[tools][train]") {
  const fs::path dir = fresh_dir("overwrite");
  REQUIRE(run_matmem(train("--steps 3 --out mine"), dir).status == 0);
  const CommandResult r = run_matmem(train("--steps 5 --out mine --overwrite"), dir);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("\"steps\":5"));
  const std::string metrics = read_file(dir / "mine/metrics.csv");
  CHECK_THAT(metrics, Contains("\n5,"));
  CHECK(metrics.find("\n1,") == metrics.rfind("\n1,"));  // one run's rows, not two
}

TEST_CASE("train: --resume continues a run in its own directory, or in another --out that holds no run",
          "[tools][train]") {
  const fs::path dir = fresh_dir("resume");
  REQUIRE(run_matmem(train("--steps 3 --out mine"), dir).status == 0);

  const CommandResult r = run_matmem("train --resume mine --steps 6 --json", dir);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("\"steps\":6"));
  const std::string metrics = read_file(dir / "mine/metrics.csv");
  CHECK_THAT(metrics, Contains("\n3,") && Contains("\n6,"));

  fs::create_directories(dir / "other");
  REQUIRE(run_matmem(train("--steps 2 --out other"), dir).status == 0);
  const CommandResult onto = run_matmem("train --resume mine --steps 8 --out other --json", dir);
  CHECK(onto.refused());
  CHECK_THAT(onto.output, Contains("--out other: holds a run already"));

  const CommandResult elsewhere = run_matmem("train --resume mine --steps 8 --out branch --json", dir);
  CHECK(elsewhere.status == 0);
  CHECK_THAT(read_file(dir / "branch/metrics.csv"), Contains("\n8,"));
  CHECK_THAT(read_file(dir / "mine/metrics.csv"), !Contains("\n8,"));
}

TEST_CASE("train: --resume with --set branches a run with a new learning rate or schedule, and keeps the source",
          "[tools][train]") {
  const fs::path dir = fresh_dir("resume_branch");
  REQUIRE(run_matmem(train("--steps 4 --out src"), dir).status == 0);
  const std::string before = run_contents(dir / "src");

  const CommandResult in_place = run_matmem("train --resume src --steps 6 --set lr=1e-3", dir);
  CHECK(in_place.refused());
  CHECK_THAT(in_place.output, Contains("--out NEWDIR"));
  const CommandResult model = run_matmem("train --resume src --steps 6 --out b --set ntm.slots=9", dir);
  CHECK(model.refused());
  CHECK_THAT(model.output, Contains("ntm.slots") && Contains("lr.schedule"));

  // A branch that changes nothing is the run continued in place, bit for bit; one that lowers the rate is not.
  REQUIRE(run_matmem("train --resume src --steps 7 --out same --set log_every=1", dir).status == 0);
  const CommandResult slow = run_matmem("train --resume src --steps 7 --out slow --set lr.schedule=step "
                                       "--set lr.step_every=4 --set lr.step_factor=0.1", dir);
  REQUIRE(slow.status == 0);
  CHECK_THAT(slow.output, Contains("times 0.1 every 4 steps"));
  CHECK(run_contents(dir / "src") == before);
  REQUIRE(run_matmem("train --resume src --steps 7", dir).status == 0);
  CHECK(read_file(dir / "same/checkpoint.safetensors") == read_file(dir / "src/checkpoint.safetensors"));
  CHECK(read_file(dir / "slow/checkpoint.safetensors") != read_file(dir / "src/checkpoint.safetensors"));
  CHECK_THAT(read_file(dir / "slow/config.json"), Contains("\"lr.schedule\": \"step\""));
  // The branch's learning curve starts with the source's rows up to the checkpoint.
  const std::string history = read_file(dir / "slow/metrics.csv");
  CHECK_THAT(history, Contains("\n1,") && Contains("\n4,") && Contains("\n7,"));
}

TEST_CASE("train: the MatNTM is matntm, and ntm is an alias stored as matntm", "[tools][train]") {
  const fs::path dir = fresh_dir("names");
  const CommandResult alias = run_matmem(train("--model ntm --steps 1 --out a"), dir);
  REQUIRE(alias.status == 0);
  CHECK_THAT(read_file(dir / "a/config.json"), Contains("\"model\": \"matntm\""));
  const CommandResult unknown = run_matmem(train("--model lstm --steps 1 --out b"), dir);
  CHECK(unknown.refused());
  CHECK_THAT(unknown.output, Contains("unknown model lstm (known: autoencoder, cln, fastweights, ffn, gamma, irnn, matdnc, matgru, matlstm, matntm, matrnn)"));
  CHECK_FALSE(fs::exists(dir / "b/metrics.csv"));
}

TEST_CASE("train: prints the learned μ of a gamma memory and learned fast-weight λ, η at the end", "[tools][train]") {
  const fs::path dir = fresh_dir("learned_scalars");
  const CommandResult gamma = run_matmem(
      "train --model gamma --task delay --set task.delay=2 --set gamma.mu=0.7 --set lr=1e-9 --steps 2 --out g", dir);
  REQUIRE(gamma.status == 0);
  CHECK_THAT(gamma.output, Contains("learned gamma/mem/mu = 0.7"));  // lr 1e-9: still the initial μ
  const CommandResult fw = run_matmem(
      "train --model fastweights --task retrieval --set model.layers=1x4 --set batch=2 --set fw.learn_lambda=true "
      "--set fw.learn_eta=true --set fw.lambda=0.8 --set fw.eta=0.3 --set lr=1e-9 --steps 2 --out f --json",
      dir);
  REQUIRE(fw.status == 0);
  const auto value = [&](const std::string& name) {
    std::smatch m;
    const std::regex re("\"" + name + "\":([0-9.eE+-]+)");
    return std::regex_search(fw.output, m, re) ? std::stod(m[1]) : -1.0;
  };
  CHECK_THAT(fw.output, Contains("\"learned\":{"));
  CHECK(value("fastweights/fast/lambda") == Approx(0.8).margin(1e-6));
  CHECK(value("fastweights/fast/eta") == Approx(0.3).margin(1e-6));
  const CommandResult plain = run_matmem("train --model fastweights --task retrieval --set model.layers=1x4 "
                                         "--set batch=2 --steps 1 --out p", dir);
  REQUIRE(plain.status == 0);
  CHECK_THAT(plain.output, !Contains("learned"));
}

namespace {
// metrics.csv's rows as fields, after its header (which must be `header`).
std::vector<std::vector<std::string>> rows_of(const fs::path& csv, const std::string& header) {
  std::istringstream in(read_file(csv));
  std::string line;
  std::getline(in, line);
  CHECK(line == header);
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string f; std::getline(cells, f, ',');) fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}
}  // namespace

TEST_CASE("train: metrics.csv's xent_bits is the cross-entropy in bits per sequence: loss × target bits / ln 2 for "
          "copy, the cost itself for N-grams", "[tools][train][xent]") {
  const fs::path dir = fresh_dir("xent_bits");
  // Copy of exactly 3 matrices of 2x3: 18 target bits a sequence.
  REQUIRE(run_matmem(train("--steps 4 --set task.min_length=3 --out copy"), dir).status == 0);
  const std::string header = "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped,xent_bits";
  const auto copy = rows_of(dir / "copy/metrics.csv", header);
  REQUIRE(copy.size() == 4);
  for (const auto& r : copy) {
    INFO(r[0]);
    REQUIRE(r.size() == 8);
    CHECK(std::stod(r[7]) == Approx(std::stod(r[2]) * 18 / std::log(2.0)).margin(2e-4));
  }
  REQUIRE(run_matmem("train --model matlstm --task ngrams --set 'model.layers=\"1x4\"' --set task.bits=20 --set batch=2 "
                     "--set log_every=1 --steps 3 --json --out ngrams", dir).status == 0);
  for (const auto& r : rows_of(dir / "ngrams/metrics.csv", header)) CHECK(r[7] == r[3]);
}

TEST_CASE("train: a branch of a run written before the skipped and xent_bits columns gets them filled in",
          "[tools][train][xent]") {
  const fs::path dir = fresh_dir("xent_old_header");
  REQUIRE(run_matmem(train("--steps 3 --set checkpoint_every=3 --out old"), dir).status == 0);
  // The run as an older version wrote it: neither column.
  std::string old;
  for (const auto& r : rows_of(dir / "old/metrics.csv",
                               "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped,xent_bits"))
    old += fmt::format("{},{},{},{},{},{}\n", r[0], r[1], r[2], r[3], r[4], r[5]);
  std::ofstream(dir / "old/metrics.csv") << "step,seconds,loss,bits_per_sequence,grad_norm,frames\n" << old;
  REQUIRE(run_matmem("train --resume old --steps 5 --json --out branch", dir).status == 0);
  const auto rows = rows_of(dir / "branch/metrics.csv",
                            "step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped,xent_bits");
  REQUIRE(rows.size() == 5);
  CHECK(rows[0][6] == "0");
  CHECK(rows[0][7] == "nan");
  CHECK(rows[4][7] != "nan");
  // Resumed in place, the old header is kept and its rows stay as wide as it.
  REQUIRE(run_matmem("train --resume old --steps 5 --json", dir).status == 0);
  for (const auto& r : rows_of(dir / "old/metrics.csv", "step,seconds,loss,bits_per_sequence,grad_norm,frames"))
    CHECK(r.size() == 6);
}
