// `matmem gradients` on a small trained run: every parameter's gradient norm and the whole gradient's, as the
// library computes them for the same sequence, and a row per time step of each exposed value's gradient norm.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "matmem/models/training/trainer.hpp"
#include "matmem/tests/tools/command.hpp"
#include "matmem/tools/one_sequence.hpp"

using namespace matmem;
using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("gradients: the parameters' gradient norms are the library's for the sequence, and every time step has a "
          "row", "[tools][gradients]") {
  const fs::path dir = fresh_dir("gradients");
  REQUIRE(run_matmem("train " + kSmallMatNTM + " --steps 3 --out run", dir).status == 0);
  const CommandResult r = run_matmem("gradients --checkpoint run --last --length 3 --top 1000", dir);
  INFO(r.output);
  REQUIRE(r.status == 0);

  // The same sequence and parameters through the library: each parameter's gradient norm, and the whole's.
  auto trainer = Trainer::resume((dir / "run").string());
  const tools::OneSequence one = tools::one_sequence(trainer->task(), 3, 0, 1, DType::f32, "test");
  Unroller unroller(trainer->model(), trainer->tape());
  trainer->model().params().zero_grad();
  trainer->tape().backward(unroller.run(one.seq).loss);
  double total = 0;
  std::size_t checked = 0;
  for (const auto& p : trainer->model().params()) {
    double s = 0;
    for (std::int64_t k = 0; k < p->grad.numel(); ++k) s += p->grad.get(k) * p->grad.get(k);
    total += s;
    const auto at = r.output.find("\n  " + p->name + " ");
    REQUIRE(at != std::string::npos);
    std::istringstream line(r.output.substr(at + 3 + p->name.size()));
    double printed = -1;
    line >> printed;
    CHECK(printed == Approx(std::sqrt(s)).epsilon(1e-3).margin(1e-30));
    ++checked;
  }
  CHECK(checked == trainer->model().params().size());
  const auto at = r.output.find("gradient norm ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(r.output.substr(at + 14)) == Approx(std::sqrt(total)).epsilon(1e-3));

  // A row per time step (t = 0 .. frames − 1), a column per exposed value.
  CHECK_THAT(r.output, Contains("memory") && Contains("read1/weighting") && Contains("write1/weighting"));
  const std::size_t frames = one.seq.inputs.size();
  CHECK(r.output.find("\n  " + std::string(4 - std::to_string(frames - 1).size(), ' ') + std::to_string(frames - 1) +
                      "  ") != std::string::npos);
  CHECK(r.output.find("\n  " + std::string(4 - std::to_string(frames).size(), ' ') + std::to_string(frames) + "  ") ==
        std::string::npos);
}

TEST_CASE("gradients: --items for a copy run is refused naming --length", "[tools][gradients][errors]") {
  const fs::path dir = fresh_dir("gradients_refused");
  REQUIRE(run_matmem("train " + kSmallMatNTM + " --steps 2 --out run", dir).status == 0);
  const CommandResult r = run_matmem("gradients --checkpoint run --items 3", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("gradients: --items is for the recall task") && Contains("--length"));
}
