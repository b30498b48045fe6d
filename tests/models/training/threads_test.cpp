// Training steps split over threads (Trainer, config key threads): the parts' gradients add up to the whole
// batch's, and a run with threads is reproducible.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>

#include "matmem/models/training/trainer.hpp"
#include "small_config.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
Config with_threads(Config c, int threads) {
  c.set("threads", std::to_string(threads), "test");
  return c;
}
}  // namespace

TEST_CASE("a step split over threads has the whole batch's loss, bits and gradient", "[trainer][threads]") {
  for (const char* model : {"matntm", "matlstm"})
    for (int threads : {2, 3}) {
      const int batch = 4 * threads + 1;  // uneven parts: 4 and 5, or 4, 4 and 5
      INFO(model << ", " << threads << " threads, batch " << batch);
      Config c = testing::small_config(model, 4, batch);
      c.set("clip.value", "0", "test");  // compare the gradients as computed
      Trainer one(c), many(with_threads(c, threads));
      REQUIRE(many.threads() == threads);
      for (int step = 0; step < 3; ++step) {
        const StepStats a = one.step(), b = many.step();
        CHECK(b.frames == a.frames);
        CHECK(b.loss == Approx(a.loss).epsilon(1e-5));
        CHECK(b.bits == Approx(a.bits).margin(1e-9));
        CHECK(b.grad_norm == Approx(a.grad_norm).epsilon(1e-4));
        const ParameterStore &pa = one.model().params(), &pb = many.model().params();
        REQUIRE(pa.size() == pb.size());
        double scale = 0, diff = 0;
        for (std::size_t k = 0; k < pa.size(); ++k)
          for (std::int64_t e = 0; e < pa[k].grad.numel(); ++e) {
            scale = std::max(scale, std::abs(pa[k].grad.get(e)));
            diff = std::max(diff, std::abs(pa[k].grad.get(e) - pb[k].grad.get(e)));
          }
        CHECK(scale > 0);
        CHECK(diff <= 1e-4 * scale);
      }
    }
}

TEST_CASE("a run with threads is reproducible bit for bit", "[trainer][threads]") {
  Config c = with_threads(testing::small_config("matntm", 4, 8), 2);
  Trainer a(c), b(c);
  for (int k = 0; k < 5; ++k) {
    const StepStats sa = a.step(), sb = b.step();
    CHECK(sa.loss == sb.loss);
    CHECK(sa.grad_norm == sb.grad_norm);
  }
  for (std::size_t k = 0; k < a.model().params().size(); ++k) {
    const Tensor &x = a.model().params()[k].value, &y = b.model().params()[k].value;
    CHECK(std::memcmp(x.raw(), y.raw(), x.bytes()) == 0);
  }
}

TEST_CASE("a step runs in at most one thread per four sequences, and at least one", "[trainer][threads]") {
  Trainer t(with_threads(testing::small_config("matrnn", 3, 11), 4));
  CHECK(t.threads() == 2);
  t.step();
  Trainer single(with_threads(testing::small_config("matrnn", 3, 7), 4));
  CHECK(single.threads() == 1);
  single.step();
  CHECK_THROWS_WITH(Trainer(with_threads(testing::small_config("matrnn"), 0)), Contains("threads = 0"));
}

TEST_CASE("a step split over threads times each part on its thread", "[trainer][threads]") {
  Trainer t(with_threads(testing::small_config("matntm", 4, 12), 3));
  REQUIRE(t.threads() == 3);
  CHECK(t.part_seconds().empty());  // no step yet
  const auto start = std::chrono::steady_clock::now();
  t.step();
  const double step = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(t.part_seconds().size() == 3);
  for (double s : t.part_seconds()) {
    CHECK(s > 0);
    CHECK(s < step);  // a part is inside the step
  }
  Trainer single(testing::small_config("matntm", 4, 12));
  single.step();
  CHECK(single.part_seconds().empty());
}
