// The reconstruction task (models/data/fashion_reconstruction.hpp) on small IDX files the test writes: clean
// targets, a 5x5 black patch on evaluation inputs where patch_of says, masking noise on training inputs, fixed
// by (seed, step).
#include "matmem/models/data/fashion_reconstruction.hpp"

#include <catch2/catch.hpp>

#include "matmem/runtime/error.hpp"
#include "small_data.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

namespace {
FashionMnistOptions options(bool flat) {
  static const std::string dir = [] {
    const std::string d = testing::temp_dir("fashion-ae");
    testing::write_fashion_dir(d, 40, 20);
    return d;
  }();
  FashionMnistOptions o;
  o.data_dir = dir;
  o.train = 30, o.validation = 10, o.test = 15, o.batch = 4, o.flatten = flat;
  return o;
}
double at(const Tensor& t, std::int64_t b, std::int64_t i, std::int64_t j, bool flat) {
  return flat ? t.at(b, 0, i * 28 + j) : t.at(b, i, j);
}
}  // namespace

TEST_CASE("evaluation inputs: the clean image with a 5x5 black patch, and the clean image as target", "[data][reconstruction]") {
  for (bool flat : {false, true}) {
    const FashionMnistReconstructionTask task(options(flat), 0.2);
    CHECK(task.target_kind() == TargetKind::reals);
    CHECK(task.output_cols() == task.input_cols());
    Sequence seq;
    task.split_batch_into(Split::test, 3, 4, seq, DType::f64);
    REQUIRE(seq.kind == TargetKind::reals);
    for (std::int64_t b = 0; b < 4; ++b) {
      const std::int64_t k = task.images().split_indices(Split::test)[std::size_t(3 + b)];
      const auto [i0, j0] = task.patch_of(k);
      CHECK(i0 >= 0);
      CHECK(i0 <= 23);
      CHECK(j0 <= 23);
      for (std::int64_t i = 0; i < 28; ++i)
        for (std::int64_t j = 0; j < 28; ++j) {
          const double clean = testing::pixel(k, i, j) / 255.0;
          CHECK(at(seq.targets[0], b, i, j, flat) == Approx(clean).margin(1e-12));
          const bool patched = i >= i0 && i < i0 + 5 && j >= j0 && j < j0 + 5;
          CHECK(at(seq.inputs[0], b, i, j, flat) == Approx(patched ? 0.0 : clean).margin(1e-12));
        }
    }
  }
}

TEST_CASE("training inputs: masking noise at the configured rate, the same for the same step", "[data][reconstruction]") {
  const FashionMnistReconstructionTask task(options(false), 0.2), again(options(false), 0.2);
  Rng unused(0);
  Sequence a, b;
  std::int64_t zeroed = 0, nonzero = 0;
  for (std::int64_t step = 0; step < 7; ++step) {
    task.sample_step_into(step, unused, a, DType::f64);
    again.sample_step_into(step, unused, b, DType::f64);
    for (std::int64_t e = 0; e < a.inputs[0].numel(); ++e) {
      CHECK(a.inputs[0].get(e) == b.inputs[0].get(e));
      const double x = a.inputs[0].get(e), t = a.targets[0].get(e);
      if (t == 0) continue;  // a black pixel says nothing
      ++nonzero;
      if (x == 0) ++zeroed;
      else CHECK(x == t);
    }
  }
  // 28 images, about 21,000 non-black pixels: 20% ± 1.5% (over 9 standard deviations).
  CHECK(double(zeroed) / double(nonzero) == Approx(0.2).margin(0.015));
  CHECK_THROWS_WITH(FashionMnistReconstructionTask(options(false), 1.0), Contains("task.noise = 1"));
}
