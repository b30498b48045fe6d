// batch_norm: values by an independent formula, the running statistics (their update and evaluation with
// them), a batch split over threads through a BatchCollective equal to the whole batch at once, and the
// refusals. The gradient is checked with every op in gradcheck_all_test.cpp.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <future>
#include <cmath>
#include <thread>
#include <vector>

#include "matmem/ops/batch_norm.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/random.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;
using Catch::Matchers::Contains;
using matmem::testing::logical;

namespace {
// x's mean and biased variance of element (i, j) over the batch, by logical indexing.
void moments(const Tensor& x, std::int64_t i, std::int64_t j, double& mean, double& var) {
  const std::int64_t B = x.shape().batch;
  mean = 0;
  for (std::int64_t b = 0; b < B; ++b) mean += x.at(b, i, j);
  mean /= double(B);
  var = 0;
  for (std::int64_t b = 0; b < B; ++b) var += (x.at(b, i, j) - mean) * (x.at(b, i, j) - mean);
  var /= double(B);
}
}  // namespace

TEST_CASE("batch_norm normalises each matrix element over the batch by hand", "[ops][batch_norm]") {
  Tape tape(DType::f64);
  // Element (0, 0) over the batch: 1, 2, 6 (mean 3, variance 14/3); every other element b·(i + 2j) + i.
  Tensor x = logical(matrices(3, 2, 3), [](auto b, auto i, auto j) {
    return i == 0 && j == 0 ? std::array<double, 3>{1, 2, 6}[b] : double(b * (i + 2 * j) + i);
  });
  const double eps = 1e-5;
  Tensor y = batch_norm(tape.input(x), eps).value_copy();
  CHECK(y.at(0, 0, 0) == Approx((1 - 3) / std::sqrt(14.0 / 3 + eps)).epsilon(1e-12));
  CHECK(y.at(2, 0, 0) == Approx((6 - 3) / std::sqrt(14.0 / 3 + eps)).epsilon(1e-12));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      double m, v;
      moments(x, i, j, m, v);
      for (std::int64_t b = 0; b < 3; ++b) {
        INFO("b " << b << " i " << i << " j " << j);
        CHECK(y.at(b, i, j) == Approx((x.at(b, i, j) - m) / std::sqrt(v + eps)).epsilon(1e-12).margin(1e-12));
      }
    }
}

TEST_CASE("batch_norm's running statistics: the update in training, their use in evaluation",
          "[ops][batch_norm]") {
  Rng rng(3);
  Tensor x = random_tensor(rng, matrices(5, 2, 3), -1.0, 2.0);
  Tensor mean(DType::f64, parameter(2, 3)), var(DType::f64, parameter(2, 3));
  mean.fill(0.5);
  var.fill(2.0);
  const BatchNormRunning running{&mean, &var, 0.1};
  {
    Tape tape(DType::f64);
    batch_norm(tape.input(x), running);  // no scope: nothing updated
    CHECK(mean.at(0, 1, 2) == 0.5);
    CHECK(var.at(0, 1, 2) == 2.0);
    BatchNormScope train({BatchNormMode::batch, true});
    batch_norm(tape.input(x), running);
  }
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      double m, v;
      moments(x, i, j, m, v);
      CHECK(mean.at(0, i, j) == Approx(0.9 * 0.5 + 0.1 * m).epsilon(1e-12));
      CHECK(var.at(0, i, j) == Approx(0.9 * 2.0 + 0.1 * v * 5.0 / 4.0).epsilon(1e-12));  // unbiased
    }
  // Evaluation: the running statistics, whatever the batch; gradient s·g.
  Tape tape(DType::f64);
  BatchNormScope eval({BatchNormMode::running});
  const double eps = 1e-5;
  Var in = tape.input(x, true);
  Var y = batch_norm(in, running, eps);
  for (std::int64_t b = 0; b < 5; ++b)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        CHECK(y.value_copy().at(b, i, j) ==
              Approx((x.at(b, i, j) - mean.at(0, i, j)) / std::sqrt(var.at(0, i, j) + eps)).epsilon(1e-12));
  tape.backward(sum(y));
  CHECK(in.grad_copy().at(3, 1, 0) == Approx(1 / std::sqrt(var.at(0, 1, 0) + eps)).epsilon(1e-12));
}

TEST_CASE("batch_norm over a batch split across threads through a BatchCollective equals the whole batch",
          "[ops][batch_norm]") {
  // B = 7 in parts of 3 and 4, each on its own tape and thread; the same random upstream gradient.
  Rng rng(5);
  const Shape s = matrices(7, 3, 2);
  Tensor x = random_tensor(rng, s, -1.0, 3.0), g = random_tensor(rng, s);
  Tape whole(DType::f64);
  Var xw = whole.input(x, true);
  Var yw = batch_norm(xw);
  whole.backward(yw, g);
  const Tensor y_all = yw.value_copy(), gx_all = xw.grad_copy();

  const std::int64_t first[3] = {0, 3, 7};
  std::vector<Tensor> xs, gs, ys(2), gxs(2);
  for (int k = 0; k < 2; ++k) {
    const std::int64_t n = first[k + 1] - first[k];
    xs.push_back(logical(matrices(n, 3, 2), [&](auto b, auto i, auto j) { return x.at(first[k] + b, i, j); }));
    gs.push_back(logical(matrices(n, 3, 2), [&](auto b, auto i, auto j) { return g.at(first[k] + b, i, j); }));
  }
  BatchCollective collective(2);
  Tensor mean[2], var[2];
  auto part = [&](int k) {
    mean[k] = Tensor(DType::f64, parameter(3, 2));
    var[k] = Tensor(DType::f64, parameter(3, 2));
    var[k].fill(1.0);
    BatchNormScope scope({BatchNormMode::batch, true, &collective, k, xs[std::size_t(k)].shape().batch});
    Tape tape(DType::f64);
    Var xp = tape.input(xs[std::size_t(k)], true);
    Var yp = batch_norm(xp, BatchNormRunning{&mean[k], &var[k]});
    tape.backward(yp, gs[std::size_t(k)]);
    ys[std::size_t(k)] = yp.value_copy();
    gxs[std::size_t(k)] = xp.grad_copy();
  };
  std::thread other(part, 1);
  part(0);
  other.join();
  for (int k = 0; k < 2; ++k)
    for (std::int64_t b = 0; b < xs[std::size_t(k)].shape().batch; ++b)
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 2; ++j) {
          INFO("part " << k << " b " << b << " i " << i << " j " << j);
          CHECK(ys[std::size_t(k)].at(b, i, j) == Approx(y_all.at(first[k] + b, i, j)).epsilon(1e-12).margin(1e-13));
          CHECK(gxs[std::size_t(k)].at(b, i, j) ==
                Approx(gx_all.at(first[k] + b, i, j)).epsilon(1e-10).margin(1e-13));
        }
  // Both parts took the same whole-batch statistics, bit for bit, into their running averages.
  for (std::int64_t e = 0; e < 6; ++e) {
    CHECK(mean[0].get(e) == mean[1].get(e));
    CHECK(var[0].get(e) == var[1].get(e));
  }
}

TEST_CASE("an aborted BatchCollective wakes the part waiting for a sum, and works again after reset",
          "[ops][batch_norm]") {
  BatchCollective c(2);
  double v0[2] = {1, 2};
  // Part 0 waits for part 1, which fails instead of calling sum().
  auto waiting = std::async(std::launch::async, [&] {
    try {
      c.sum(0, v0, 2);
    } catch (const BatchCollectiveAborted& e) {
      return std::string(e.what());
    }
    return std::string("summed");
  });
  CHECK(waiting.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);  // it waits
  c.abort();
  REQUIRE(waiting.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK_THAT(waiting.get(), Contains("another part of the batch failed"));
  CHECK(c.failed());
  // A part arriving after the abort fails at once.
  CHECK_THROWS_AS(c.sum(1, v0, 2), BatchCollectiveAborted);
  c.reset();
  CHECK_FALSE(c.failed());
  double v1[2] = {10, 20};
  v0[0] = 1, v0[1] = 2;
  std::thread other([&] { c.sum(1, v1, 2); });
  c.sum(0, v0, 2);
  other.join();
  CHECK(v0[0] == 11);
  CHECK(v0[1] == 22);
  CHECK(v1[0] == 11);
  CHECK(v1[1] == 22);
}

TEST_CASE("batch_norm refuses a memory, a pass of another size than its part's, and mismatched statistics",
          "[ops][errors]") {
  Tape tape(DType::f64);
  Tensor m(DType::f64, memory(2, 3, 2, 2)), x(DType::f64, matrices(4, 2, 2));
  CHECK_THROWS_WITH(batch_norm(tape.input(m)), Contains("batch_norm") && Contains("memory"));
  Tensor mean(DType::f64, parameter(2, 2)), var(DType::f64, parameter(2, 2)), wrong(DType::f64, parameter(2, 3));
  BatchNormScope scope({BatchNormMode::batch, true, nullptr, 0, 8});
  CHECK_THROWS_WITH(batch_norm(tape.input(x), BatchNormRunning{&mean, &var}), Contains("micro-batches"));
  CHECK_THROWS_WITH(batch_norm(tape.input(x), BatchNormRunning{&mean, &wrong}), Contains("running statistics"));
}
