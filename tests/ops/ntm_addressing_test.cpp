// ntm_addressing of several heads in one op call (ntm_addressing_heads): gradcheck in float64 at 1, 2, 5 and 8
// heads, and values and every gradient equal to the composed ops of each head (so two heads' outputs or
// inputs swapped, or a head skipped, fail), with gradients assigned or added to.
#include <catch2/catch.hpp>

#include <array>
#include <string>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;
using matmem::testing::check_close;
using matmem::testing::check_gradients;
using matmem::testing::run_in;

TEST_CASE("ntm_addressing of several heads passes gradcheck at 1, 2, 5 and 8 heads", "[ops][gradcheck][heads]") {
  for (int heads : {1, 2, 5, 8})
    for (SampleSize size : {SampleSize::small, SampleSize::large}) {
      Rng rng(47);
      check_gradients(ntm_addressing_heads_sample(rng, size, heads), size == SampleSize::small,
                      std::to_string(heads) + (size == SampleSize::small ? " heads, small" : " heads, large"));
    }
}

namespace {
// Σ_g (g + 1) w_g of the heads' weightings, fused or composed, the heads on rows first .. first + G − 1.
Var addressing_output(std::span<const Var> x, int heads, std::int64_t first, bool fused) {
  const auto G = std::size_t(heads);
  std::array<std::array<Var, kNtmAddressingMaxHeads>, 5> in;  // β, g, s, γ, w_prev per head
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t p = 0; p < 5; ++p) in[p][g] = x[1 + 5 * g + p];
  std::array<Var, kNtmAddressingMaxHeads> w;
  if (fused) {
    auto part = [&](std::size_t p) { return std::span<const Var>(in[p].data(), G); };
    ntm_addressing(x[0], first, part(0), part(1), part(2), part(3), part(4), std::span<Var>(w.data(), G));
  } else {
    for (std::size_t g = 0; g < G; ++g) {
      const Var wc = softmax(hadamard(in[0][g], row(x[0], first + std::int64_t(g))));
      const Var wg = add(hadamard(in[1][g], wc), hadamard(one_minus(in[1][g]), in[4][g]));
      w[g] = sharpen(circular_shift(wg, in[2][g]), in[3][g]);
    }
  }
  Var y = w[0];
  for (std::size_t g = 1; g < G; ++g) y = add(y, scale(w[g], double(g + 1)));
  return y;
}
}  // namespace

TEST_CASE("ntm_addressing of several heads equals the composed ops of each head, in values and every gradient",
          "[ops][heads]") {
  // The heads on all the similarity's rows (its gradient assigned) or on rows 1.. of one more (zeroed, then
  // assigned row by row); N = 120 (the NTM's), 17 (a SIMD tail); shifts of 3 and 5.
  struct Case {
    std::int64_t batch, n, k;
  };
  for (Case cs : {Case{16, 120, 3}, Case{3, 17, 5}})
    for (int heads : {1, 2, 5, 8, 12})
      for (std::int64_t first : {0, 1}) {
        Rng rng(std::uint64_t(heads * 10 + first));
        const std::int64_t B = cs.batch, N = cs.n;
        OpSample fused;
        fused.inputs = {{"similarity", random_tensor(rng, matrices(B, heads + first, N))}};
        for (int g = 0; g < heads; ++g) {
          fused.inputs.push_back({"beta", random_tensor(rng, scalars(B), 0.2, 3.0)});
          fused.inputs.push_back({"gate", random_tensor(rng, scalars(B), 0.05, 0.95)});
          fused.inputs.push_back({"shift", random_tensor(rng, weighting(B, cs.k), 0.05, 1.0)});
          fused.inputs.push_back({"gamma", random_tensor(rng, scalars(B), 1.0, 3.0)});
          fused.inputs.push_back({"w_prev", random_tensor(rng, weighting(B, N), 0.0, 1.0)});
        }
        OpSample composed = fused;
        fused.apply = [=](Tape&, std::span<const Var> x) { return addressing_output(x, heads, first, true); };
        composed.apply = [=](Tape&, std::span<const Var> x) { return addressing_output(x, heads, first, false); };
        const std::string what = std::to_string(heads) + " heads from row " + std::to_string(first) + ", B " +
                                 std::to_string(B) + " N " + std::to_string(N) + " K " + std::to_string(cs.k);
        check_close(run_in(DType::f64, composed, 11), run_in(DType::f64, fused, 11), 1e-10, what + ", float64");
        check_close(run_in(DType::f32, composed, 11), run_in(DType::f32, fused, 11), 2e-3, what + ", float32");
        // the heads one call each: the same kernel, the same values bit for bit
        OpSample each = fused;
        each.apply = [=](Tape&, std::span<const Var> x) {
          Var y;
          for (int g = 0; g < heads; ++g) {
            const std::size_t a = 1 + 5 * std::size_t(g);
            const Var w = ntm_addressing(x[0], first + g, x[a], x[a + 1], x[a + 2], x[a + 3], x[a + 4]);
            y = g == 0 ? w : add(y, scale(w, double(g + 1)));
          }
          return y;
        };
        check_close(run_in(DType::f32, each, 11), run_in(DType::f32, fused, 11), 0.0, what + ", one call per head");
      }
}

TEST_CASE("ntm_addressing of several heads refuses more than 12, rows that do not exist and unequal shifts",
          "[ops][heads]") {
  Rng rng(5);
  const Tensor sim = random_tensor(rng, matrices(2, 13, 7)), sc = random_tensor(rng, scalars(2), 0.1, 1.0),
               s3 = random_tensor(rng, weighting(2, 3), 0.1, 1.0), s5 = random_tensor(rng, weighting(2, 5), 0.1, 1.0),
               wp = random_tensor(rng, weighting(2, 7), 0.1, 1.0);
  Tape tape(DType::f64);
  const Var x = tape.input(sim), b = tape.input(sc), v3 = tape.input(s3), v5 = tape.input(s5), w = tape.input(wp);
  const std::vector<Var> b13(13, b), s13(13, v3), w13(13, w);
  std::vector<Var> out(13);
  CHECK_THROWS_WITH(ntm_addressing(x, 0, b13, b13, s13, b13, w13, out),
                    Catch::Contains("ntm_addressing_heads") && Catch::Contains("between 1 and 12"));
  const auto two = [](const std::vector<Var>& v) { return std::span<const Var>(v.data(), 2); };
  std::vector<Var> out2(2);
  CHECK_THROWS_WITH(ntm_addressing(x, 12, two(b13), two(b13), two(s13), two(b13), two(w13), out2),
                    Catch::Contains("head 13"));
  const std::vector<Var> mixed{v3, v5};
  CHECK_THROWS_WITH(ntm_addressing(x, 0, two(b13), two(b13), mixed, two(b13), two(w13), out2),
                    Catch::Contains("same width"));
}

// ntm_addressing_logits: the heads' activations inside the op. Its values and every gradient must be those of
// softplus, sigmoid, softmax and 1 + softplus composed with ntm_addressing_heads bit for bit (the same arithmetic
// in the same order), in float32 and float64, at batch 1 and 16, gradients assigned and added to.
TEST_CASE("ntm_addressing_logits passes gradcheck and equals the activations composed with ntm_addressing, bit "
          "for bit", "[ops][heads][gradcheck]") {
  for (int heads : {1, 3, 8})
    for (SampleSize size : {SampleSize::small, SampleSize::large}) {
      Rng rng(53);
      check_gradients(ntm_addressing_heads_sample(rng, size, heads, /*logits=*/true), size == SampleSize::small,
                      std::to_string(heads) + " heads from logits");
    }
  struct Case {
    std::int64_t batch, n, k;
  };
  for (Case cs : {Case{1, 128, 3}, Case{16, 120, 3}, Case{3, 17, 5}})
    for (int heads : {1, 5, 12})
      for (bool twice : {false, true}) {
        Rng rng(std::uint64_t(heads) + 100);
        const std::int64_t B = cs.batch, N = cs.n;
        OpSample fused;
        fused.inputs = {{"similarity", random_tensor(rng, matrices(B, heads, N))}};
        for (int g = 0; g < heads; ++g) {
          fused.inputs.push_back({"beta_logit", random_tensor(rng, scalars(B), -3.0, 3.0)});
          fused.inputs.push_back({"gate_logit", random_tensor(rng, scalars(B), -3.0, 3.0)});
          fused.inputs.push_back({"shift_logit", random_tensor(rng, weighting(B, cs.k), -3.0, 3.0)});
          fused.inputs.push_back({"gamma_logit", random_tensor(rng, scalars(B), -3.0, 3.0)});
          fused.inputs.push_back({"w_prev", random_tensor(rng, weighting(B, N), 0.0, 1.0)});
        }
        OpSample composed = fused;
        const auto G = std::size_t(heads);
        auto output = [G](std::span<Var> w) {
          Var y = w[0];
          for (std::size_t g = 1; g < G; ++g) y = add(y, scale(w[g], double(g + 1)));
          return y;
        };
        // twice: the logits feed a second, identical call too, so every gradient is added to one already there
        fused.apply = [=](Tape&, std::span<const Var> x) {
          std::array<std::array<Var, kNtmAddressingMaxHeads>, 5> in;
          for (std::size_t g = 0; g < G; ++g)
            for (std::size_t p = 0; p < 5; ++p) in[p][g] = x[1 + 5 * g + p];
          auto part = [&](std::size_t p) { return std::span<const Var>(in[p].data(), G); };
          std::array<Var, kNtmAddressingMaxHeads> w, w2;
          ntm_addressing_logits(x[0], 0, part(0), part(1), part(2), part(3), part(4), std::span<Var>(w.data(), G));
          Var y = output(std::span<Var>(w.data(), G));
          if (twice) {
            ntm_addressing_logits(x[0], 0, part(0), part(1), part(2), part(3), part(4), std::span<Var>(w2.data(), G));
            y = add(y, scale(output(std::span<Var>(w2.data(), G)), 0.5));
          }
          return y;
        };
        composed.apply = [=](Tape&, std::span<const Var> x) {
          auto once = [&](std::array<Var, kNtmAddressingMaxHeads>& w) {
            std::array<std::array<Var, kNtmAddressingMaxHeads>, 5> in;
            for (std::size_t g = 0; g < G; ++g) {
              const std::size_t a = 1 + 5 * g;
              in[0][g] = softplus(x[a]);
              in[1][g] = sigmoid(x[a + 1]);
              in[2][g] = softmax(x[a + 2]);
              in[3][g] = affine(softplus(x[a + 3]), 1.0, 1.0);
              in[4][g] = x[a + 4];
            }
            auto part = [&](std::size_t p) { return std::span<const Var>(in[p].data(), G); };
            ntm_addressing(x[0], 0, part(0), part(1), part(2), part(3), part(4), std::span<Var>(w.data(), G));
            return output(std::span<Var>(w.data(), G));
          };
          std::array<Var, kNtmAddressingMaxHeads> w, w2;
          Var y = once(w);
          if (twice) y = add(y, scale(once(w2), 0.5));
          return y;
        };
        const std::string what = std::to_string(heads) + " heads, B " + std::to_string(B) + " N " +
                                 std::to_string(N) + " K " + std::to_string(cs.k) + (twice ? ", twice" : "");
        check_close(run_in(DType::f64, composed, 17), run_in(DType::f64, fused, 17), 0.0, what + ", float64");
        check_close(run_in(DType::f32, composed, 17), run_in(DType::f32, fused, 17), 0.0, what + ", float32");
      }
}
