// Values of the ops where naive formulas overflow, divide by zero or lose precision.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/slots.hpp"

using namespace matmem;

namespace {
Tensor filled(Shape s, std::initializer_list<double> values, DType t = DType::f32) {
  Tensor x(t, s);
  std::int64_t k = 0;
  for (double v : values) x.set(k++, v);
  return x;
}
}  // namespace

TEST_CASE("softplus and sigmoid do not overflow for large inputs in float32", "[ops][numerics]") {
  Tape tape(DType::f32);
  Tensor x = filled(matrices(1, 1, 4), {200.0, -200.0, 89.0, 0.0});
  Var in = tape.input(x, true);
  Var sp = softplus(in);
  Var sg = sigmoid(in);
  CHECK(sp.value<float>()[0] == Approx(200.0));
  CHECK(sp.value<float>()[1] == Approx(0.0).margin(1e-30));
  CHECK(sp.value<float>()[2] == Approx(89.0));
  CHECK(sp.value<float>()[3] == Approx(std::log(2.0)));
  CHECK(sg.value<float>()[0] == 1.0f);
  CHECK(sg.value<float>()[1] == Approx(0.0).margin(1e-30));
  tape.backward(sum(sp));
  for (int k = 0; k < 4; ++k) CHECK(std::isfinite(in.grad<float>()[k]));
}

TEST_CASE("activations pass a NaN on, so a diverged state reaches the loss and is caught", "[ops][numerics]") {
  const double nan = std::nan("");
  for (DType t : {DType::f32, DType::f64}) {
    Tape tape(t);
    const Tensor x = filled(matrices(1, 1, 3), {nan, -1.0, 2.0}, t);
    Var in = tape.input(x);
    for (Var y : {relu(in), tanh(in), sigmoid(in), softplus(in)}) {
      CHECK(std::isnan(y.value_copy().get(0)));
      CHECK(std::isfinite(y.value_copy().get(1)));
      CHECK(std::isfinite(y.value_copy().get(2)));
    }
    CHECK(relu(in).value_copy().get(1) == 0.0);
    CHECK(relu(in).value_copy().get(2) == 2.0);
  }
}

TEST_CASE("bce_with_logits is exact and finite for large logits", "[ops][numerics]") {
  Tape tape(DType::f32);
  Tensor x = filled(matrices(1, 1, 2), {100.0, -100.0});
  Tensor t = filled(matrices(1, 1, 2), {0.0, 1.0});
  Var loss = bce_with_logits(tape.input(x), tape.input(t));
  CHECK(loss.item() == Approx(100.0));  // mean of two losses of 100 each
}

TEST_CASE("softmax subtracts the max: huge logits give a finite distribution", "[ops][numerics]") {
  Tape tape(DType::f32);
  Tensor x = filled(weighting(1, 3), {1000.0, 1000.0, 0.0});
  Var y = softmax(tape.input(x));
  CHECK(y.value<float>()[0] == Approx(0.5));
  CHECK(y.value<float>()[2] == Approx(0.0).margin(1e-30));
}

TEST_CASE("sharpen of weights with exact zeros has finite values and gradients", "[ops][numerics]") {
  Tape tape(DType::f64);
  Tensor w = filled(weighting(1, 4), {0.0, 0.5, 0.5, 0.0}, DType::f64);
  Tensor gamma = filled(scalars(1), {1.0}, DType::f64);
  Var wv = tape.input(w, true), gv = tape.input(gamma, true);
  Var y = sharpen(wv, gv);
  CHECK(y.value<double>()[1] == Approx(0.5));
  CHECK(y.value<double>()[0] == Approx(0.0).margin(1e-10));
  Tensor seed = filled(weighting(1, 4), {0.3, -1.0, 2.0, 0.7}, DType::f64);
  tape.backward(y, seed);
  for (int k = 0; k < 4; ++k) CHECK(std::isfinite(wv.grad<double>()[k]));
  CHECK(std::isfinite(gv.grad<double>()[0]));
}

TEST_CASE("cosine similarity at zero norms is 0 with finite gradients", "[ops][numerics]") {
  Tape tape(DType::f64);
  Tensor k(DType::f64, matrices(1, 2, 2));  // all zero
  Tensor m(DType::f64, memory(1, 2, 2, 2));
  m.set(0, 1.0);
  Var kv = tape.input(k, true), mv = tape.input(m, true);
  Var y = cosine_similarity(kv, mv);
  CHECK(y.value<double>()[0] == 0.0);
  CHECK(y.value<double>()[1] == 0.0);
  tape.backward(sum(y));
  for (int q = 0; q < 4; ++q) CHECK(std::isfinite(kv.grad<double>()[q]));
  for (int q = 0; q < 8; ++q) CHECK(std::isfinite(mv.grad<double>()[q]));
}

TEST_CASE("circular shift moves weight by one slot and wraps around", "[ops]") {
  Tape tape(DType::f64);
  Tensor w = filled(weighting(1, 4), {1, 0, 0, 0}, DType::f64);
  Tensor s = filled(weighting(1, 3), {0, 0, 1}, DType::f64);  // shift +1
  Var y = circular_shift(tape.input(w), tape.input(s));
  CHECK(y.value<double>()[1] == 1.0);
  Tensor back = filled(weighting(1, 3), {1, 0, 0}, DType::f64);  // shift -1
  Var z = circular_shift(tape.input(w), tape.input(back));
  CHECK(z.value<double>()[3] == 1.0);
}

TEST_CASE("bilinear equals Uᵀ P V computed by hand, in both association orders, and passes gradcheck", "[ops]") {
  // [r,c] -> [r',c']: 2x3 -> 4x2 is computed V first (P V, then Uᵀ), 5x4 -> 1x2 U first (Uᵀ P, then V).
  struct Dims {
    std::int64_t r, c, rp, cp;
  };
  for (const Dims d : {Dims{2, 3, 4, 2}, Dims{5, 4, 1, 2}}) {
    INFO(d.r << "x" << d.c << " -> " << d.rp << "x" << d.cp);
    Tape tape(DType::f64);
    Tensor p(DType::f64, matrices(3, d.r, d.c)), u(DType::f64, parameter(d.r, d.rp)), v(DType::f64, parameter(d.c, d.cp));
    for (std::int64_t k = 0; k < p.numel(); ++k) p.set(k, 0.1 * k - 0.7);
    for (std::int64_t k = 0; k < u.numel(); ++k) u.set(k, 0.3 * k - 1.0);
    for (std::int64_t k = 0; k < v.numel(); ++k) v.set(k, 0.2 - 0.15 * k);
    Var y = bilinear(tape.input(p), tape.input(u), tape.input(v));
    REQUIRE(y.shape() == matrices(3, d.rp, d.cp));
    for (int b = 0; b < 3; ++b)
      for (int i = 0; i < d.rp; ++i)
        for (int j = 0; j < d.cp; ++j) {
          double expect = 0;
          for (int a = 0; a < d.r; ++a)
            for (int c = 0; c < d.c; ++c) expect += u.at(0, a, i) * p.at(b, a, c) * v.at(0, c, j);
          CHECK(y.value<double>().at(b, i, j) == Approx(expect));
        }
    GradcheckOptions opt;
    opt.full_jacobian = true;
    std::vector<GradcheckInput> in = {{"P", p}, {"U", u}, {"V", v}};
    const GradcheckReport report =
        gradcheck([](Tape&, std::span<const Var> x) { return bilinear(x[0], x[1], x[2]); }, in, nullptr, opt);
    INFO(report.str());
    CHECK(report.passed);
  }
}

TEST_CASE("cosine similarity of several keys equals one call per key and passes gradcheck", "[ops][gradcheck]") {
  for (SampleSize size : {SampleSize::small, SampleSize::large}) {
    Rng rng(21);
    const SampleDims d = sample_dims(size);
    std::vector<GradcheckInput> in = {{"K1", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))},
                                      {"K2", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))},
                                      {"K3", random_tensor(rng, matrices(d.batch, d.mem_rows, d.mem_cols))},
                                      {"M", random_tensor(rng, memory(d.batch, d.slots, d.mem_rows, d.mem_cols))}};
    Tape tape(DType::f64);
    std::vector<Var> v;
    for (auto& x : in) v.push_back(tape.input(x.value));
    const Var all = cosine_similarity(std::span<const Var>(v.data(), 3), v[3]);
    REQUIRE(all.shape() == Shape{d.batch, 1, 3, d.slots});
    for (int h = 0; h < 3; ++h) {
      const Var one = cosine_similarity(v[h], v[3]);
      const Var r = row(all, h);
      for (std::int64_t k = 0; k < one.shape().numel(); ++k) CHECK(r.value<double>()[k] == Approx(one.value<double>()[k]));
    }
    GradcheckOptions opt;
    opt.full_jacobian = size == SampleSize::small;
    GradcheckReport report = gradcheck(
        [](Tape&, std::span<const Var> x) {
          return add(row(cosine_similarity(x.subspan(0, 3), x[3]), 0), row(cosine_similarity(x.subspan(0, 3), x[3]), 2));
        },
        in, nullptr, opt);
    INFO(report.str());
    CHECK(report.passed);
  }
}

TEST_CASE("batch-innermost transposition puts each element where a memory's layout does, and back", "[ops]") {
  // float32 goes through 16 x 16 tiles (whole tiles, edges in both directions, several tiles per block),
  // through full vectors at batches 2 and 4, and one value at a time when small and accumulated; nothing
  // is written past the end (sentinels)
  constexpr float kSentinel = -7.0f;
  constexpr std::size_t kPast = 40;
  for (std::int64_t B : {1, 2, 3, 4, 8, 16, 17, 33})
  for (std::int64_t c : {3, 5, 6, 16, 37, 120}) {
    const std::int64_t r = 2;
    const Shape x = matrices(B, r, c), mem = memory(B, 2, r, c);
    const auto n = static_cast<std::size_t>(x.numel());
    std::vector<float> v(n), t(n + kPast, kSentinel), back(n + kPast, 1.0f);
    std::fill(back.begin() + std::ptrdiff_t(n), back.end(), kSentinel);
    for (std::size_t k = 0; k < n; ++k) v[k] = float(k);
    ops::to_batch_inner(v.data(), B, r, c, t.data());
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t j = 0; j < c; ++j) {
          INFO("B " << B << " c " << c << " b " << b << " i " << i << " j " << j);
          // slot 0 of a memory holds element (b, i, j) at the same place as the transposed key
          CHECK(t[std::size_t(mem.offset(b, 0, i, j))] == v[std::size_t(x.offset(b, 0, i, j))]);
        }
    INFO("B " << B << " c " << c);
    CHECK(std::all_of(t.begin() + std::ptrdiff_t(n), t.end(), [&](float f) { return f == kSentinel; }));
    ops::from_batch_inner(t.data(), B, r, c, back.data(), /*accumulate=*/true);
    for (std::size_t k = 0; k < n; ++k) CHECK(back[k] == 1.0f + v[k]);
    ops::from_batch_inner(t.data(), B, r, c, back.data(), /*accumulate=*/false);
    CHECK(std::equal(v.begin(), v.end(), back.begin()));
    CHECK(std::all_of(back.begin() + std::ptrdiff_t(n), back.end(), [&](float f) { return f == kSentinel; }));
  }
}

TEST_CASE("simd_loop covers every lane of a batch once and writes nothing past it", "[ops]") {
  // y[q] = 2 x[q] + 1 over lanes [0, n), then sentinels: every width's full chunks and, with AVX-512VL, the
  // masked last pass (a store of a whole 128-bit batch there would overwrite the sentinels).
  auto check = [](auto zero) {
    using T = decltype(zero);
    for (std::int64_t n = 1; n <= 40; ++n) {
      INFO("n " << n << ", " << sizeof(T) * 8 << "-bit");
      std::vector<T> x(std::size_t(n) + 32), y(std::size_t(n) + 32, T(-7));
      for (std::size_t k = 0; k < x.size(); ++k) x[k] = T(k);
      std::vector<int> calls(std::size_t(n), 0);
      ops::simd_loop<T>(n, [&](std::int64_t q, auto v) {
        using X = decltype(v);
        ops::store<X>(y.data() + q, ops::load<X>(x.data() + q) * X(T(2)) + X(T(1)));
        ++calls[std::size_t(q)];
      });
      for (std::int64_t k = 0; k < n; ++k) CHECK(y[std::size_t(k)] == T(2 * k + 1));
      for (std::size_t k = std::size_t(n); k < y.size(); ++k) CHECK(y[k] == T(-7));
      std::int64_t passes = 0;
      for (int c : calls) passes += c;
      CHECK(passes >= 1);
      CHECK(passes <= n);
    }
  };
  check(float(0));
  check(double(0));
}

TEST_CASE("memory ops refuse a one-slot memory with a message naming the op and the shape", "[ops]") {
  Rng rng(3);
  Tape tape(DType::f64);
  const Tensor m = random_tensor(rng, memory(2, 1, 3, 3)), w = random_tensor(rng, weighting(2, 1)),
               k = random_tensor(rng, matrices(2, 3, 3));
  const Var mv = tape.input(m), wv = tape.input(w), kv = tape.input(k);
  CHECK_THROWS_WITH(memory_read(mv, wv), Catch::Contains("memory_read") && Catch::Contains("N ≥ 2"));
  CHECK_THROWS_WITH(memory_write(mv, wv, kv, kv), Catch::Contains("memory_write") && Catch::Contains("[2,3,3]"));
  CHECK_THROWS_WITH(cosine_similarity(kv, mv), Catch::Contains("cosine_similarity"));
}

TEST_CASE("cosine similarity of 1 to 6 keys (fixed-count and general kernels) equals one call per key", "[ops]") {
  Rng rng(5);
  const Shape ms = memory(3, 7, 2, 5);
  const Tensor m = random_tensor(rng, ms);
  std::vector<Tensor> k;
  for (int h = 0; h < 6; ++h) k.push_back(random_tensor(rng, matrices(3, 2, 5)));
  for (std::size_t keys = 1; keys <= 6; ++keys) {
    INFO(keys << " keys");
    Tape tape(DType::f64);
    std::vector<Var> v;
    for (std::size_t h = 0; h < keys; ++h) v.push_back(tape.input(k[h], true));
    const Var mv = tape.input(m, true);
    const Var all = cosine_similarity(std::span<const Var>(v.data(), keys), mv);
    for (std::size_t h = 0; h < keys; ++h) {
      const Var one = cosine_similarity(v[h], mv);
      for (std::int64_t q = 0; q < one.shape().numel(); ++q)
        CHECK(row(all, std::int64_t(h)).value<double>()[q] == Approx(one.value<double>()[q]).epsilon(1e-12));
    }
  }
}

TEST_CASE("memory_write's gradients are right whether it assigns a fresh grad_M or adds to one", "[ops][gradcheck]") {
  Rng rng(9);
  std::vector<GradcheckInput> in = {{"M", random_tensor(rng, memory(3, 5, 2, 3))},
                                    {"w", random_tensor(rng, weighting(3, 5), 0.0, 1.0)},
                                    {"E", random_tensor(rng, matrices(3, 2, 3), 0.0, 1.0)},
                                    {"A", random_tensor(rng, matrices(3, 2, 3))}};
  GradcheckOptions opt;
  opt.full_jacobian = true;
  // First contributor to every input's gradient: grad_M is assigned.
  GradcheckReport first = gradcheck(
      [](Tape&, std::span<const Var> x) { return memory_write(x[0], x[1], x[2], x[3]); }, in, nullptr, opt);
  INFO(first.str());
  CHECK(first.passed);
  // A later consumer of M runs its backward first, so memory_write adds to a live grad_M.
  GradcheckReport later = gradcheck(
      [](Tape&, std::span<const Var> x) {
        const Var m = memory_write(x[0], x[1], x[2], x[3]);
        return add(m, hadamard(x[0], x[0]));
      },
      in, nullptr, opt);
  INFO(later.str());
  CHECK(later.passed);
}

namespace {
// ntm_addressing inputs in the ranges the NTM gives them, as its registry sample: similarity [B,2,N], β, g,
// γ [B,1], s [B,K], w_{t−1} [B,N].
std::vector<Tensor> addressing_inputs(Rng& rng, std::int64_t batch, std::int64_t n, std::int64_t k) {
  return {random_tensor(rng, matrices(batch, 2, n)),      random_tensor(rng, scalars(batch), 0.2, 3.0),
          random_tensor(rng, scalars(batch), 0.05, 0.95), random_tensor(rng, weighting(batch, k), 0.05, 1.0),
          random_tensor(rng, scalars(batch), 1.0, 3.0),   random_tensor(rng, weighting(batch, n), 0.0, 1.0)};
}
// The value of the fused op (or of the ops it fuses) in dtype t and the gradient of every input, for a
// random upstream gradient.
Tensor run_addressing(const std::vector<Tensor>& in, DType t, bool fused, std::vector<Tensor>& grads) {
  std::vector<Tensor> values;  // held until the tape is gone
  for (const Tensor& v : in) values.push_back(v.to(t));
  Tape tape(t);
  std::vector<Var> x;
  for (const Tensor& v : values) x.push_back(tape.input(v, true));
  Var w;
  if (fused) {
    w = ntm_addressing(x[0], 1, x[1], x[2], x[3], x[4], x[5]);
  } else {
    const Var wc = softmax(hadamard(x[1], row(x[0], 1)));
    const Var wg = add(hadamard(x[2], wc), hadamard(one_minus(x[2]), x[5]));
    w = sharpen(circular_shift(wg, x[3]), x[4]);
  }
  Tensor seed(t, w.shape());
  Rng srng(3);
  for (std::int64_t k = 0; k < seed.numel(); ++k) seed.set(k, srng.normal());
  tape.backward(w, seed);
  for (const Var& v : x) grads.push_back(v.grad_copy());
  return w.value_copy();
}
const char* const kAddressingInputs[] = {"similarity", "beta", "gate", "shift", "gamma", "w_prev"};
}  // namespace

// Sizes: the registry samples (N = 7, 19 with K = 3), one row (B = 1), N a multiple of both SIMD widths
// and one past it, N smaller than one float64 chunk, the NTM's N = 120, and wider shifts (K = 5, 2S+1 = N).
TEST_CASE("ntm_addressing equals the composed ops it fuses, in values and in every gradient", "[ops]") {
  struct Case { std::int64_t batch, n, k; };
  for (Case cs : {Case{2, 7, 3}, Case{3, 19, 3}, Case{1, 120, 3}, Case{2, 16, 3}, Case{2, 17, 5}, Case{1, 3, 3},
                  Case{1, 5, 5}, Case{16, 120, 3}}) {
    INFO("B " << cs.batch << " N " << cs.n << " K " << cs.k);
    Rng rng(17);
    const std::vector<Tensor> in = addressing_inputs(rng, cs.batch, cs.n, cs.k);
    std::vector<Tensor> gf, gc;
    const Tensor wf = run_addressing(in, DType::f64, true, gf), wc = run_addressing(in, DType::f64, false, gc);
    for (std::int64_t k = 0; k < wf.numel(); ++k)
      CHECK(wf.get(k) == Approx(wc.get(k)).epsilon(1e-12).margin(1e-15));
    for (std::size_t t = 0; t < gf.size(); ++t) {
      INFO(kAddressingInputs[t]);
      for (std::int64_t k = 0; k < gf[t].numel(); ++k)
        CHECK(gf[t].get(k) == Approx(gc[t].get(k)).epsilon(1e-10).margin(1e-12));
    }
    // float32 (16 lanes, not 8) against float64, to float32's precision
    std::vector<Tensor> g32;
    const Tensor w32 = run_addressing(in, DType::f32, true, g32);
    for (std::int64_t k = 0; k < wf.numel(); ++k)
      CHECK(w32.get(k) == Approx(wf.get(k)).epsilon(1e-4).margin(1e-6));
    for (std::size_t t = 0; t < gf.size(); ++t) {
      INFO(kAddressingInputs[t] << " float32");
      for (std::int64_t k = 0; k < gf[t].numel(); ++k)
        CHECK(g32[t].get(k) == Approx(gf[t].get(k)).epsilon(1e-3).margin(1e-4));
    }
  }
}

TEST_CASE("memory ops pass gradcheck at a batch that fills SIMD chunks and leaves a tail", "[ops][gradcheck]") {
  // Batch 19 in float64: two 8-lane chunks (AVX-512), a 2-lane chunk and a scalar lane; in float32 a
  // 16-lane chunk and the last 3 in a masked 128-bit pass (AVX-512VL).
  Rng rng(21);
  const std::int64_t B = 19, N = 4, r = 2, c = 3;
  std::vector<GradcheckInput> in = {{"M", random_tensor(rng, memory(B, N, r, c))},
                                    {"w", random_tensor(rng, weighting(B, N), 0.0, 1.0)},
                                    {"E", random_tensor(rng, matrices(B, r, c), 0.0, 1.0)},
                                    {"A", random_tensor(rng, matrices(B, r, c))},
                                    {"K", random_tensor(rng, matrices(B, r, c))},
                                    {"M0", random_tensor(rng, memory(1, N, r, c))}};
  auto check = [&](const char* what, auto f) {
    GradcheckReport report = gradcheck(f, in, nullptr, {});
    INFO(what << ": " << report.str());
    CHECK(report.passed);
  };
  check("memory_read", [](Tape&, std::span<const Var> x) { return memory_read(x[0], x[1]); });
  check("memory_write", [](Tape&, std::span<const Var> x) { return memory_write(x[0], x[1], x[2], x[3]); });
  check("cosine_similarity, 3 keys", [](Tape&, std::span<const Var> x) {
    const std::array<Var, 3> keys{x[4], x[2], x[3]};
    return cosine_similarity(keys, x[0]);
  });
  check("cosine_similarity, 5 keys", [](Tape&, std::span<const Var> x) {
    const std::array<Var, 5> keys{x[4], x[2], x[3], x[4], x[2]};
    return cosine_similarity(keys, x[0]);
  });
  // A memory broadcast from a parameter [1,N,r,c] and from a batch of matrices, and softmax along a memory's
  // (strided) rows.
  check("broadcast into a memory", [](Tape&, std::span<const Var> x) {
    return hadamard(add(x[0], x[5]), sub(x[0], x[4]));
  });
  check("softmax of a memory", [](Tape&, std::span<const Var> x) { return softmax(hadamard(x[0], x[5])); });
}

TEST_CASE("memory_read_write equals memory_write and memory_read, in values and in every gradient", "[ops]") {
  // Batch 19: SIMD chunks and a tail in float64 (and float32); two reads (a count the kernel fixes at
  // compile time) and three (taken at run time); grad_M assigned (the fused op is M's only consumer) or
  // added to (a later consumer of M runs its backward first). Slots of 2x3 and 4x7: the element blocks
  // (kBlock = 12) of forward and backward are all partial, or two whole and one partial.
  for (const int reads : {2, 3})
  for (const auto& [r, c] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {4, 7}})
  for (bool later_consumer : {false, true}) {
    Rng rng(31);
    const std::int64_t B = 19, N = 5;
    std::vector<Tensor> in = {random_tensor(rng, memory(B, N, r, c)), random_tensor(rng, weighting(B, N), 0.0, 1.0),
                              random_tensor(rng, matrices(B, r, c), 0.0, 1.0), random_tensor(rng, matrices(B, r, c))};
    std::vector<Tensor> gr;  // the reads' upstream gradients
    for (int k = 0; k < reads; ++k) {
      in.push_back(random_tensor(rng, weighting(B, N), 0.0, 1.0));
      gr.push_back(random_tensor(rng, matrices(B, r, c)));
    }
    const Tensor g = random_tensor(rng, memory(B, N, r, c));
    // loss = <g, M'> + Σ_k <gr_k, R_k> (+ Σ M² with a later consumer)
    auto run = [&](bool fused, std::vector<Tensor>& grads) {
      Tape tape(DType::f64);
      std::vector<Var> x;
      for (const Tensor& t : in) x.push_back(tape.input(t, true));
      std::array<Var, 4> out;  // M', then the reads
      const std::span<const Var> weights = std::span<const Var>(x).subspan(4, std::size_t(reads));
      if (fused) {
        memory_read_write(x[0], weights, x[1], x[2], x[3], std::span<Var>(out).first(std::size_t(reads) + 1));
      } else {
        for (int k = 0; k < reads; ++k) out[std::size_t(k) + 1] = memory_read(x[0], weights[std::size_t(k)]);
        out[0] = memory_write(x[0], x[1], x[2], x[3]);
      }
      Var loss = sum(hadamard(out[0], tape.input(g)));
      for (int k = 0; k < reads; ++k)
        loss = add(loss, sum(hadamard(out[std::size_t(k) + 1], tape.input(gr[std::size_t(k)]))));
      if (later_consumer) loss = add(loss, sum(hadamard(x[0], x[0])));
      tape.backward(loss);
      grads.clear();
      for (int k = 0; k <= reads; ++k) grads.push_back(out[std::size_t(k)].value_copy());
      for (const Var& v : x) grads.push_back(v.grad_copy());
    };
    std::vector<Tensor> fused, separate;
    run(true, fused);
    run(false, separate);
    std::vector<std::string> names = {"M'"};
    for (int k = 1; k <= reads; ++k) names.push_back("R_" + std::to_string(k));
    for (const char* n : {"grad M", "grad w", "grad E", "grad A"}) names.push_back(n);
    for (int k = 1; k <= reads; ++k) names.push_back("grad w_" + std::to_string(k));
    REQUIRE(names.size() == fused.size());
    for (std::size_t k = 0; k < fused.size(); ++k)
      for (std::int64_t e = 0; e < fused[k].numel(); ++e) {
        INFO(reads << " reads, slots " << r << "x" << c << ", " << names[k] << " element " << e
                   << (later_consumer ? " (grad_M added to)" : " (grad_M assigned)"));
        CHECK(fused[k].get(e) == Approx(separate[k].get(e)).epsilon(1e-12).margin(1e-14));
      }
  }
}

TEST_CASE("memory ops in float32 agree with float64 at a batch that is no multiple of the SIMD widths", "[ops]") {
  // Batch 13 (ops::simd_loop): on AVX-512 an 8-lane, a 4-lane and a scalar chunk, in float32 and in
  // float64. Batch 14 (below): 8 + 4 and the last 2 lanes in a masked 128-bit pass (AVX-512VL).
  // Slots of 2x3 and 5x5 (the forward's element blocks all partial, or two whole and one partial).
  for (const std::int64_t B : {13, 14})
  for (const auto& [r, c] : {std::pair<std::int64_t, std::int64_t>{2, 3}, {5, 5}}) {
  Rng rng(51);
  const std::int64_t N = 6;
  const std::vector<Tensor> in = {random_tensor(rng, memory(B, N, r, c)), random_tensor(rng, weighting(B, N), 0.0, 1.0),
                                  random_tensor(rng, matrices(B, r, c), 0.0, 1.0), random_tensor(rng, matrices(B, r, c)),
                                  random_tensor(rng, weighting(B, N), 0.0, 1.0), random_tensor(rng, matrices(B, r, c))};
  const Tensor g = random_tensor(rng, memory(B, N, r, c)), gr = random_tensor(rng, matrices(B, r, c)),
               gs = random_tensor(rng, matrices(B, 2, N));
  auto run = [&](DType dtype) {
    Tape tape(dtype);
    std::vector<Tensor> own;  // the inputs in this tape's dtype
    for (const Tensor& t : in) own.push_back(t.to(dtype));
    const Tensor g_own = g.to(dtype), gr_own = gr.to(dtype), gs_own = gs.to(dtype);
    std::vector<Var> x;
    for (const Tensor& t : own) x.push_back(tape.input(t, true));
    std::array<Var, 2> out;
    memory_read_write(x[0], std::span<const Var>(&x[4], 1), x[1], x[2], x[3], out);
    const std::array<Var, 2> keys{x[5], x[2]};
    const Var sim = cosine_similarity(keys, x[0]);
    tape.backward(add(add(sum(hadamard(out[0], tape.input(g_own))), sum(hadamard(out[1], tape.input(gr_own)))),
                      sum(hadamard(sim, tape.input(gs_own)))));
    std::vector<Tensor> result{out[0].value_copy(), out[1].value_copy(), sim.value_copy()};
    for (const Var& v : x) result.push_back(v.grad_copy());
    return result;
  };
  const std::vector<Tensor> f32 = run(DType::f32), f64 = run(DType::f64);
  for (std::size_t k = 0; k < f32.size(); ++k)
    for (std::int64_t e = 0; e < f32[k].numel(); ++e) {
      INFO("batch " << B << ", slots " << r << "x" << c << ", tensor " << k << " element " << e);
      CHECK(f32[k].get(e) == Approx(f64[k].get(e)).epsilon(1e-4).margin(1e-5));
    }
  }
}

TEST_CASE("ntm_addressing passes gradcheck when its inputs already hold gradients from later ops", "[ops][gradcheck]") {
  // Every input is also read by ops recorded after ntm_addressing, whose backward runs first: the fused
  // op then adds to live gradients instead of assigning fresh ones (assigns_fresh's other path).
  Rng rng(29);
  const std::vector<Tensor> t = addressing_inputs(rng, 3, 19, 3);
  std::vector<GradcheckInput> in;
  for (std::size_t k = 0; k < t.size(); ++k) in.push_back({kAddressingInputs[k], t[k]});
  GradcheckReport report = gradcheck(
      [](Tape&, std::span<const Var> x) {
        const Var w = ntm_addressing(x[0], 1, x[1], x[2], x[3], x[4], x[5]);
        const Var extra = hadamard(x[5], add(hadamard(x[1], x[2]), hadamard(x[4], row(x[0], 1))));
        return add(sum(add(w, extra)), sum(hadamard(x[3], x[3])));
      },
      in, nullptr, {});
  INFO(report.str());
  CHECK(report.passed);
}
