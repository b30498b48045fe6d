// cosine_similarity of many keys in one pass (the keys in blocks of four): gradcheck in float64 at 1, 2, 5 and
// 8 keys, and values and every gradient equal to one call per key at 1 to 16 keys, at batches that take the
// lane-per-item path and the periodic one.
#include <catch2/catch.hpp>

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
