// Every numeric option of `matmem` refuses a negative, zero-where-meaningless, non-numeric or absurdly
// large value with a message naming the option, before anything runs (tools/options.hpp has the bounds).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
struct Refusal {
  std::string args, message;
};

void check_refused(const std::vector<Refusal>& cases, const std::string& dir_name) {
  const fs::path dir = fresh_dir(dir_name);
  for (const Refusal& c : cases) {
    INFO("matmem " << c.args);
    const CommandResult r = run_matmem(c.args, dir, 20);
    CHECK(r.refused());
    CHECK_THAT(r.output, Contains(c.message));
  }
  CHECK_FALSE(fs::exists(dir / "runs"));  // nothing trained
}
}  // namespace

TEST_CASE("train refuses bad numeric options, naming each", "[tools][options]") {
  check_refused(
      {
          {"train --steps 0", "--steps: 0 is out of range: expected a whole number from 1 to 1000000000"},
          {"train --steps -5", "--steps: -5 is out of range"},
          {"train --steps abc", "--steps: abc is not a whole number"},
          {"train --steps 2.5", "--steps: 2.5 is not a whole number"},
          {"train --steps 1000000001", "--steps: 1000000001 is out of range"},
          {"train --steps 99999999999999999999", "--steps: 99999999999999999999 is out of range"},
          {"train --seed -1", "--seed: -1 is out of range: expected a whole number from 0 to"},
          {"train --seed x1", "--seed: x1 is not a whole number"},
          {"train --seed 9223372036854775808", "--seed: 9223372036854775808 is out of range"},
          {"train --threads 0", "--threads: 0 is out of range: expected a whole number from 1 to 64"},
          {"train --threads 65", "--threads: 65 is out of range"},
          {"train --threads two", "--threads: two is not a whole number"},
          {"train --set steps=0", "config: steps = 0 must be ≥ 1"},
          {"train --set seed=-3", "config: seed = -3 must be ≥ 0"},
          {"train --set threads=0", "config: threads = 0 must be ≥ 1"},
          {"train --set batch=-2", "config: batch = -2 must be ≥ 1"},
          {"train --resume nowhere --steps 0", "--steps: 0 is out of range"},
      },
      "train_options");
}

TEST_CASE("eval refuses bad sizes, batches and seeds, naming each", "[tools][options]") {
  check_refused(
      {
          {"eval --checkpoint . --sizes 0", "--sizes: 0 (in 0) is not a whole number from 1 to 10000"},
          {"eval --checkpoint . --sizes 10,-3", "--sizes: -3 (in 10,-3) is not a whole number"},
          {"eval --checkpoint . --sizes 10,x", "--sizes: x (in 10,x) is not a whole number"},
          {"eval --checkpoint . --sizes 10,,20", "--sizes:  (in 10,,20) is not a whole number"},
          {"eval --checkpoint . --sizes 10001", "--sizes: 10001 (in 10001) is not a whole number from 1 to 10000"},
          {"eval --checkpoint . --sizes 99999999999999999999", "--sizes: 99999999999999999999 (in"},
          {"eval --checkpoint . --batches 0", "--batches: 0 is out of range"},
          {"eval --checkpoint . --seed -4", "--seed: -4 is out of range"},
      },
      "eval_options");
}

TEST_CASE("capacity refuses bad sizes, lags, depths and sweeps, naming each", "[tools][options]") {
  check_refused(
      {
          {"capacity --n 0", "--n: 0 is out of range: expected a whole number from 1 to 64"},
          {"capacity --n -2", "--n: -2 is out of range"},
          {"capacity --n 65", "--n: 65 is out of range"},
          {"capacity --n four", "--n: four is not a whole number"},
          {"capacity --rows 0", "--rows: 0 is out of range"},
          {"capacity --neurons 0", "--neurons: 0 is out of range"},
          {"capacity --k -1", "--k: -1 is out of range: expected a whole number from 0 to 100000"},
          {"capacity --k 1e9", "--k: 1e9 is not a whole number"},
          {"capacity --depth -1", "--depth: -1 is out of range"},
          {"capacity --depth 10000000", "--depth: 10000000 is out of range"},
          {"capacity --horizon 0", "--horizon: 0 is out of range"},
          {"capacity --samples 0 --sweep N=2,3", "--samples: 0 is out of range"},
          {"capacity --eps1 0", "--eps1: 0 is out of range: expected a number above 0"},
          {"capacity --eps2 nan", "--eps2: nan is not a finite number"},
          {"capacity --rho-max 1.5", "--rho-max: 1.5 is out of range"},
          {"capacity --seed -1", "--seed: -1 is out of range"},
          {"capacity --sweep N=0", "--sweep 'N=0': '0' is not a size from 1 to 64"},
          {"capacity --sweep N=2,x", "--sweep 'N=2,x': 'x' is not a size"},
          {"capacity --sweep 2:1000", "--sweep '2:1000': '1000' is not a size from 1 to 64"},
          {"capacity --sweep 2:4:0", "--sweep '2:4:0': '0' is not a size"},
      },
      "capacity_options");
}

TEST_CASE("bench and gradcheck refuse bad counts, naming each", "[tools][options]") {
  check_refused(
      {
          {"bench train --steps 0", "--steps: 0 is out of range: expected a whole number from 1 to 1000000"},
          {"bench train --steps many", "--steps: many is not a whole number"},
          {"bench train --warmup -1", "--warmup: -1 is out of range: expected a whole number from 0 to 1000000"},
          {"bench train --threads 0", "--threads: 0 is out of range"},
          {"bench ops --repeats 0", "--repeats: 0 is out of range"},
          {"bench ops --seconds 0", "--seconds: 0 is out of range: expected a number above 0 to 600"},
          {"bench ops --seconds inf", "--seconds: inf is not a finite number"},
          {"gradcheck --all --seed -1", "--seed: -1 is out of range"},
      },
      "other_options");
}

TEST_CASE("a valid value at each bound is accepted", "[tools][options]") {
  const fs::path dir = fresh_dir("bounds");
  const CommandResult cap = run_matmem("capacity --n 1 --k 0 --depth 0 --horizon 1", dir);
  CHECK(cap.status == 0);
  const CommandResult train = run_matmem(
      "train --steps 1 --seed 0 --threads 1 --set task.max_length=2 --set 'model.layers=\"3x3\"' --json --out r", dir);
  CHECK(train.status == 0);
  CHECK_THAT(train.output, Contains("\"steps\":1"));
}
