// mat with several terms: each term's association order (U first or V first), at the first position and
// after it (where a U-first term's product goes through scratch and is added), against a naive sum.
#include <catch2/catch.hpp>

#include "autodiff/gradcheck.hpp"
#include "ops/ops.hpp"
#include "ops/registry.hpp"

using namespace matmem;

namespace {
struct Dims {
  std::int64_t r, c;
};
// Output 4x3. P 5x2 and 6x2 are computed U first, P 2x5 V first (bilinear.cpp's u_first).
constexpr std::int64_t kRp = 4, kCp = 3;
constexpr Dims kTerms[] = {{5, 2}, {2, 5}, {6, 2}};

std::vector<GradcheckInput> inputs(std::int64_t batch) {
  Rng rng(5);
  std::vector<GradcheckInput> in;
  for (int t = 0; t < 3; ++t) {
    const std::string k = std::to_string(t + 1);
    in.push_back({"P" + k, random_tensor(rng, matrices(batch, kTerms[t].r, kTerms[t].c))});
    in.push_back({"U" + k, random_tensor(rng, parameter(kTerms[t].r, kRp))});
    in.push_back({"V" + k, random_tensor(rng, parameter(kTerms[t].c, kCp))});
  }
  in.push_back({"B", random_tensor(rng, parameter(kRp, kCp))});
  return in;
}

Var three_terms(Tape&, std::span<const Var> x) {
  return mat({{x[0], x[1], x[2]}, {x[3], x[4], x[5]}, {x[6], x[7], x[8]}}, x[9]);
}
}  // namespace

TEST_CASE("mat of U-first and V-first terms equals the naive sum and passes gradcheck", "[ops][gradcheck]") {
  for (std::int64_t batch : {1, 3, 17}) {
    INFO("batch " << batch);
    std::vector<GradcheckInput> in = inputs(batch);
    for (DType dtype : {DType::f64, DType::f32}) {
      Tape tape(dtype);
      std::vector<Tensor> values;
      for (const auto& x : in) values.push_back(x.value.to(dtype));
      std::vector<Var> vars;
      for (const Tensor& v : values) vars.push_back(tape.input(v));
      const Var y = three_terms(tape, vars);
      REQUIRE(y.shape() == matrices(batch, kRp, kCp));
      const Tensor got = y.value_copy();
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t i = 0; i < kRp; ++i)
          for (std::int64_t j = 0; j < kCp; ++j) {
            double expect = in[9].value.at(0, i, j);
            for (int t = 0; t < 3; ++t)
              for (std::int64_t a = 0; a < kTerms[t].r; ++a)
                for (std::int64_t c = 0; c < kTerms[t].c; ++c)
                  expect += in[3 * t + 1].value.at(0, a, i) * in[3 * t].value.at(b, a, c) * in[3 * t + 2].value.at(0, c, j);
            const double tol = dtype == DType::f32 ? 1e-5 : 1e-12;  // float32: sums of ~30 products near 1
            CHECK(got.at(b, i, j) == Approx(expect).epsilon(tol).margin(tol));
          }
    }
    GradcheckOptions opt;
    opt.full_jacobian = true;
    const GradcheckReport report = gradcheck(three_terms, in, nullptr, opt);
    INFO(report.str());
    CHECK(report.passed);
  }
}
