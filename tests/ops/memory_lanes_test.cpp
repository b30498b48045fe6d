// The memory ops, memory_writes among them, at batches narrower than the SIMD width (1, 2, 4, 8), where they
// walk each slot as its E·B consecutive values with periodic lanes (ops/slots.hpp; memory_writes at batch 1
// chunk by chunk, its reads as GEMMs): float64 gradchecks (one application, and two
// so that every gradient is added into an existing one), float32 against float64, the periodic path against
// the lane-per-item path on the same inputs, and a run repeated bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/ops/slots.hpp"
#include "matmem/tests/ops/op_testing.hpp"

using namespace matmem;
using matmem::testing::run_in;
using matmem::testing::run_with;

namespace {
// A memory of 7 slots of 3×5 (E·B = 15·B values per slot: every width leaves a masked tail, and 7 slots are
// a group of four and three single slots), or of 9 slots of 6×6 (the paper's slot).
struct Dims {
  std::int64_t slots, rows, cols;
};
constexpr Dims kSmall{7, 3, 5}, kPaper{9, 6, 6};

OpSample cosine_sample(Rng& rng, std::int64_t B, Dims d, int H) {
  OpSample s;
  for (int h = 0; h < H; ++h)
    s.inputs.push_back({std::string("K").append(std::to_string(h + 1)), random_tensor(rng, matrices(B, d.rows, d.cols))});
  s.inputs.push_back({"M", random_tensor(rng, memory(B, d.slots, d.rows, d.cols))});
  s.apply = [H](Tape&, std::span<const Var> x) { return cosine_similarity(x.first(std::size_t(H)), x[std::size_t(H)]); };
  return s;
}
// memory_write (R = 0) or memory_read_write with R reads; the output depends on M' and every read.
OpSample write_sample(Rng& rng, std::int64_t B, Dims d, int R) {
  OpSample s;
  s.inputs = memory_write_inputs(rng, {B, 1, 1, 1, 1, d.slots, d.rows, d.cols});
  for (int r = 0; r < R; ++r)
    s.inputs.push_back({std::string("w_").append(std::to_string(r + 1)), random_tensor(rng, weighting(B, d.slots), 0.0, 1.0)});
  s.apply = [R](Tape&, std::span<const Var> x) {
    if (R == 0) return memory_write(x[0], x[1], x[2], x[3]);
    std::array<Var, Tape::kMaxOutputs> out;
    memory_read_write(x[0], x.subspan(4, std::size_t(R)), x[1], x[2], x[3], std::span<Var>(out.data(), std::size_t(R) + 1));
    Var y = memory_read(out[0], x[1]);
    for (int r = 0; r < R; ++r) y = add(y, scale(out[std::size_t(r) + 1], double(r + 1)));
    return y;
  };
  return s;
}

// memory_writes with `count` writes and two reads, the output depending on M' and both reads.
OpSample writes_sample(Rng& rng, std::int64_t B, Dims d, int count) {
  OpSample s;
  s.inputs = {{"M", random_tensor(rng, memory(B, d.slots, d.rows, d.cols))}};
  for (int j = 1; j <= count; ++j) {
    const std::string k = std::to_string(j);
    s.inputs.push_back({"w" + k, random_tensor(rng, weighting(B, d.slots), 0.0, 1.0)});
    s.inputs.push_back({"E" + k, random_tensor(rng, matrices(B, d.rows, d.cols), 0.0, 1.0)});
    s.inputs.push_back({"A" + k, random_tensor(rng, matrices(B, d.rows, d.cols))});
  }
  for (int r = 1; r <= 2; ++r)
    s.inputs.push_back({"v" + std::to_string(r), random_tensor(rng, weighting(B, d.slots), 0.0, 1.0)});
  s.apply = [count](Tape&, std::span<const Var> x) {
    const auto K = std::size_t(count);
    std::array<Var, 16> w, e, a, out;
    for (std::size_t j = 0; j < K; ++j) w[j] = x[1 + 3 * j], e[j] = x[2 + 3 * j], a[j] = x[3 + 3 * j];
    memory_writes(x[0], x.subspan(1 + 3 * K, 2), std::span<const Var>(w.data(), K), std::span<const Var>(e.data(), K),
                  std::span<const Var>(a.data(), K), std::span<Var>(out.data(), 3));
    return add(memory_read(out[0], x[1]), add(out[1], scale(out[2], 2.0)));
  };
  return s;
}

struct Case {
  std::string name;
  OpSample (*make)(Rng&, std::int64_t, Dims, int);
  int count;  // keys or reads
};
const std::array<Case, 9> kCases{{{"cosine_similarity, 1 key", cosine_sample, 1},
                                  {"cosine_similarity, 2 keys", cosine_sample, 2},
                                  {"cosine_similarity, 5 keys", cosine_sample, 5},
                                  {"memory_write", write_sample, 0},
                                  {"memory_read_write, 1 read", write_sample, 1},
                                  {"memory_read_write, 2 reads", write_sample, 2},
                                  {"memory_read_write, 3 reads", write_sample, 3},
                                  {"memory_writes, 2 writes, 2 reads", writes_sample, 2},
                                  {"memory_writes, 5 writes, 2 reads", writes_sample, 5}}};

// Every element of b within tol · (the largest |a| of its tensor) of a.
void require_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    double scale = 0;
    for (std::int64_t k = 0; k < a[t].numel(); ++k) scale = std::max(scale, std::abs(a[t].get(k)));
    for (std::int64_t k = 0; k < a[t].numel(); ++k) {
      INFO((t == 0 ? std::string("output") : "gradient of input " + std::to_string(t - 1)) << " element " << k
                                                                                           << ": " << a[t].get(k)
                                                                                           << " against " << b[t].get(k));
      REQUIRE(std::abs(a[t].get(k) - b[t].get(k)) <= tol * scale);
    }
  }
}

// Sets ops::periodic_lanes for a scope.
struct PeriodicLanes {
  bool saved = ops::periodic_lanes;
  explicit PeriodicLanes(bool on) { ops::periodic_lanes = on; }
  ~PeriodicLanes() { ops::periodic_lanes = saved; }
};
}  // namespace

TEST_CASE("the memory ops take the periodic path at batches that divide the SIMD width", "[ops][lanes]") {
#ifdef MATMEM_PERIODIC_LANES
  for (std::int64_t B : {1, 2, 4, 8}) CHECK(ops::use_periodic_lanes<float>(B));
  for (std::int64_t B : {1, 2, 4}) CHECK(ops::use_periodic_lanes<double>(B));
  for (std::int64_t B : {3, 16, 19}) CHECK_FALSE(ops::use_periodic_lanes<float>(B));
  for (std::int64_t B : {3, 8, 19}) CHECK_FALSE(ops::use_periodic_lanes<double>(B));
#else
  WARN("SKIPPED: no AVX-512 on this build: the periodic path is compiled out and the tests below check the lane "
       "path");
#endif
}

TEST_CASE("the memory ops pass gradcheck at batches 1, 2, 4 and 8", "[ops][lanes][gradcheck]") {
  for (const Case& c : kCases)
    for (std::int64_t B : {1, 2, 4, 8})
      for (bool twice : {false, true})
        SECTION(c.name + ", batch " + std::to_string(B) + (twice ? ", applied twice" : "")) {
          Rng rng(41 + std::uint64_t(B));
          OpSample sample = c.make(rng, B, kSmall, c.count);
          if (twice) sample = applied_twice(std::move(sample));
          GradcheckReport report = gradcheck(sample.apply, sample.inputs, nullptr);
          INFO(report.str());
          CHECK(report.passed);
          CHECK(report.elements_checked > 0);
        }
}

// The two paths sum a slot's terms in different orders (one chain per item against W/B partial sums per
// item, folded pairwise), so they agree to rounding: with sums of at most 36 terms, a few ulps of the
// largest term per term, 1e-5 of a tensor's largest value in float32 and 1e-13 in float64; a lane or
// element taken wrongly is off by O(1).
TEST_CASE("the periodic path equals the lane-per-item path to rounding", "[ops][lanes]") {
  for (const Case& c : kCases)
    for (std::int64_t B : {1, 2, 4, 8})
      for (Dims d : {kSmall, kPaper})
        SECTION(c.name + ", batch " + std::to_string(B) + ", " + std::to_string(d.rows) + "x" + std::to_string(d.cols)) {
          Rng rng(7 + std::uint64_t(B));
          const OpSample sample = applied_twice(c.make(rng, B, d, c.count));
          for (auto [dtype, tol] : {std::pair{DType::f32, 1e-5}, std::pair{DType::f64, 1e-13}}) {
            INFO((dtype == DType::f32 ? "float32" : "float64"));
            std::vector<Tensor> lanes, periodic;
            {
              PeriodicLanes off(false);
              lanes = run_in(dtype, sample, 5);
            }
            periodic = run_in(dtype, sample, 5);
            require_close(lanes, periodic, tol);
          }
        }
}

TEST_CASE("float32 agrees with float64 at batches 1, 2, 4 and 8", "[ops][lanes][precision]") {
  for (const Case& c : kCases)
    for (std::int64_t B : {1, 2, 4, 8})
      SECTION(c.name + ", batch " + std::to_string(B)) {
        Rng rng(77);
        const OpSample sample = c.make(rng, B, kPaper, c.count);
        require_close(run_in(DType::f64, sample, 5), run_in(DType::f32, sample, 5), 1e-4);
      }
}

TEST_CASE("the memory ops repeat a run bit for bit at batches 1, 2, 4 and 8", "[ops][lanes]") {
  for (const Case& c : kCases)
    for (std::int64_t B : {1, 2, 4, 8})
      SECTION(c.name + ", batch " + std::to_string(B)) {
        Rng rng(3);
        const OpSample sample = c.make(rng, B, kPaper, c.count);
        const std::vector<Tensor> a = run_in(DType::f32, sample, 5), b = run_in(DType::f32, sample, 5);
        require_close(a, b, 0.0);
      }
}

namespace {
// Element (b, n, i, j) of a, as double.
double item(const Tensor& a, std::int64_t b, std::int64_t n, std::int64_t i, std::int64_t j) {
  return a.get(a.shape().offset(b, n, i, j));
}
// Copies item 0 of `from` (batch 1) into item 0 of `to`.
void set_item0(Tensor& to, const Tensor& from) {
  const Shape& s = from.shape();
  for (std::int64_t n = 0; n < s.slots; ++n)
    for (std::int64_t i = 0; i < s.rows; ++i)
      for (std::int64_t j = 0; j < s.cols; ++j) to.set(to.shape().offset(0, n, i, j), item(from, 0, n, i, j));
}

// Item 0 of a batch of 3 (the lane path), given the batch-1 sample's inputs and output gradient, gives the
// batch-1 values and gradients (its GEMM path) to rounding: a slot, key or read taken wrongly, or a term dropped,
// is off by O(1).
void require_batch1_is_item0(OpSample (*make)(Rng&, std::int64_t, Dims, int), int count, Dims d) {
  Rng rng(11 + std::uint64_t(count));
  const OpSample one = make(rng, 1, d, count);
  OpSample three = make(rng, 3, d, count);
  for (std::size_t t = 0; t < one.inputs.size(); ++t) set_item0(three.inputs[t].value, one.inputs[t].value);
  Tape probe(DType::f64);  // for the outputs' shapes
  std::vector<Var> v1, v3;
  for (const auto& in : one.inputs) v1.push_back(probe.input(in.value));
  for (const auto& in : three.inputs) v3.push_back(probe.input(in.value));
  Tensor g1(DType::f64, one.apply(probe, v1).shape()), g3(DType::f64, three.apply(probe, v3).shape());
  for (std::int64_t k = 0; k < g1.numel(); ++k) g1.set(k, rng.normal());
  for (std::int64_t k = 0; k < g3.numel(); ++k) g3.set(k, rng.normal());
  set_item0(g3, g1);
  for (auto [dtype, tol] : {std::pair{DType::f32, 1e-5}, std::pair{DType::f64, 1e-13}}) {
    INFO((dtype == DType::f32 ? "float32" : "float64"));
    const std::vector<Tensor> a = run_with(dtype, one, g1), b = run_with(dtype, three, g3);
    for (std::size_t t = 0; t < a.size(); ++t) {
      const Shape& s = a[t].shape();
      double scale = 0;
      for (std::int64_t k = 0; k < a[t].numel(); ++k) scale = std::max(scale, std::abs(a[t].get(k)));
      for (std::int64_t n = 0; n < s.slots; ++n)
        for (std::int64_t i = 0; i < s.rows; ++i)
          for (std::int64_t j = 0; j < s.cols; ++j) {
            INFO((t == 0 ? std::string("output") : "gradient of input " + std::to_string(t - 1))
                 << " at (" << n << ", " << i << ", " << j << ")");
            REQUIRE(std::abs(item(a[t], 0, n, i, j) - item(b[t], 0, n, i, j)) <= tol * scale);
          }
    }
  }
}
}  // namespace

TEST_CASE("cosine_similarity at batch 1 (its GEMM path) equals item 0 of a batch of 3 (the lane path)", "[ops][lanes]") {
  for (int H : {1, 3, 5, 10})
    for (Dims d : {kSmall, kPaper, Dims{128, 1, 20}})
      SECTION(std::to_string(H) + " keys, " + std::to_string(d.slots) + " slots of " + std::to_string(d.rows) + "x" +
              std::to_string(d.cols)) {
        require_batch1_is_item0(cosine_sample, H, d);
      }
}

TEST_CASE("memory_read_write at batch 1 (reads as GEMMs) equals item 0 of a batch of 3 (the lane path)", "[ops][lanes]") {
  for (int R : {1, 2, 3, 5})
    for (Dims d : {kSmall, kPaper, Dims{128, 1, 20}})
      SECTION(std::to_string(R) + " reads, " + std::to_string(d.slots) + " slots of " + std::to_string(d.rows) + "x" +
              std::to_string(d.cols)) {
        require_batch1_is_item0(write_sample, R, d);
      }
}
