// cosine_similarity of many keys in one pass (the keys in blocks of four): gradcheck in float64 at 1, 2, 5 and
// 8 keys, and values and every gradient equal to one call per key at 1 to 16 keys, at batches that take the
// lane-per-item path and the periodic one.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;
using matmem::testing::check_close;
using matmem::testing::check_gradients;
using matmem::testing::run_in;

TEST_CASE("cosine_similarity passes gradcheck at 1, 2, 5 and 8 keys", "[ops][gradcheck][heads]") {
  for (int keys : {1, 2, 5, 8})
    for (SampleSize size : {SampleSize::small, SampleSize::lanes}) {
      Rng rng(41);
      check_gradients(cosine_similarity_sample(rng, size, keys), size == SampleSize::small,
                      std::to_string(keys) + (size == SampleSize::small ? " keys, small" : " keys, lanes"));
    }
}

TEST_CASE("cosine_similarity of 1 to 16 keys equals one call per key, in values and every gradient", "[ops][heads]") {
  // Batches 16 and 19 (lanes over the batch, a full vector and a tail), 3 (narrow lanes) and 2 and 8 (the
  // periodic path on AVX-512); 7 slots (a group of four and three single ones).
  for (std::int64_t B : {16, 19, 3, 2, 8})
    for (int keys = 1; keys <= 16; ++keys) {
      Rng rng(7 + std::uint64_t(keys));
      SampleDims d = sample_dims(SampleSize::small);
      d.batch = B, d.slots = 7;
      OpSample fused;
      for (int h = 0; h < keys; ++h)
        fused.inputs.push_back({"K" + std::to_string(h + 1), random_tensor(rng, matrices(B, d.mem_rows, d.mem_cols))});
      fused.inputs.push_back({"M", random_tensor(rng, memory(B, d.slots, d.mem_rows, d.mem_cols))});
      const auto H = std::size_t(keys);
      fused.apply = [H](Tape&, std::span<const Var> x) { return cosine_similarity(x.first(H), x[H]); };
      OpSample each = fused;
      each.apply = [H](Tape&, std::span<const Var> x) {
        std::vector<Var> rows;
        for (std::size_t h = 0; h < H; ++h) rows.push_back(cosine_similarity(x[h], x[H]));
        return stack_rows(rows);
      };
      const std::string what = std::to_string(keys) + " keys, batch " + std::to_string(B);
      check_close(run_in(DType::f64, each, 5), run_in(DType::f64, fused, 5), 1e-12, what + ", float64");
      check_close(run_in(DType::f32, each, 5), run_in(DType::f32, fused, 5), 1e-5, what + ", float32");
    }
}

TEST_CASE("cosine_similarity with epsilons under the norms equals the formula and is smooth at a zero slot",
          "[ops][gradcheck][heads]") {
  // y_{h,n} = <K_h, M_n> / (√(‖K_h‖² + ε_n) √(‖M_n‖² + ε_n) + ε_p), computed here with plain loops, at
  // batches of both paths (16 and 19 lanes over the batch, 3 narrow, 2 and 8 periodic on AVX-512), one and
  // five keys; slot 1 is zero, where the function is smooth once ε_n > 0, so gradcheck holds there too.
  const CosineEps eps{0.2, 0.3};
  for (std::int64_t B : {16, 19, 3, 2, 8})
    for (int keys : {1, 5}) {
      Rng rng(90 + std::uint64_t(B * keys));
      SampleDims d = sample_dims(SampleSize::small);
      d.batch = B, d.slots = 5;
      const Shape ks = matrices(B, d.mem_rows, d.mem_cols), ms = memory(B, d.slots, d.mem_rows, d.mem_cols);
      OpSample sample;
      for (int h = 0; h < keys; ++h) sample.inputs.push_back({"K" + std::to_string(h + 1), random_tensor(rng, ks)});
      Tensor m = random_tensor(rng, ms);
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < ms.rows; ++i)
          for (std::int64_t j = 0; j < ms.cols; ++j) m.set(ms.offset(b, 1, i, j), 0.0);
      sample.inputs.push_back({"M", m});
      const auto H = std::size_t(keys);
      sample.apply = [H, eps](Tape&, std::span<const Var> x) { return cosine_similarity(x.first(H), x[H], eps); };
      const std::string what = std::to_string(keys) + " keys, batch " + std::to_string(B);
      const Tensor y = run_in(DType::f64, sample, 3)[0];
      for (std::int64_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
          for (std::int64_t n = 0; n < ms.slots; ++n) {
            const Tensor& k = sample.inputs[h].value;
            double dot = 0, kk = eps.norm, mm = eps.norm;
            for (std::int64_t i = 0; i < ms.rows; ++i)
              for (std::int64_t j = 0; j < ms.cols; ++j) {
                const double kv = k.get(ks.offset(b, 0, i, j)), mv = m.get(ms.offset(b, n, i, j));
                dot += kv * mv, kk += kv * kv, mm += mv * mv;
              }
            INFO(what << ", item " << b << ", key " << h << ", slot " << n);
            CHECK(y.get(y.shape().offset(b, 0, std::int64_t(h), n)) ==
                  Approx(dot / (std::sqrt(kk) * std::sqrt(mm) + eps.product)).epsilon(1e-12).margin(1e-14));
          }
      if (B <= 3 || B == 8) check_gradients(sample, false, what);
    }
}

TEST_CASE("cosine_similarity refuses epsilons that are negative, zero on the product or not finite", "[ops]") {
  const Tensor kt(DType::f64, matrices(1, 2, 2)), mt(DType::f64, memory(1, 3, 2, 2));
  Tape tape(DType::f64);
  const Var k = tape.input(kt), m = tape.input(mt);
  CHECK_THROWS_WITH(cosine_similarity(k, m, {0.0, 0.0}), Catch::Contains("cosine_similarity") && Catch::Contains("epsilon"));
  CHECK_THROWS_WITH(cosine_similarity(k, m, {1e-8, -1.0}), Catch::Contains("got 1e-08 and -1"));
  CHECK_THROWS_WITH(cosine_similarity(k, m, {1e-8, std::nan("")}), Catch::Contains("epsilon"));
}
