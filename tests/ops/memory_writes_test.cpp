// memory_writes, an NTM step's reads and all its writes in one pass over the memory: gradcheck in float64 at
// 1, 2, 5 and 8 writes, and values and every gradient equal to memory_read and one memory_write after another
// in head order (so a skipped write or two writes swapped fail), with grad_M assigned or added to.
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

TEST_CASE("memory_writes passes gradcheck at 1, 2, 5 and 8 writes, with and without reads", "[ops][gradcheck][heads]") {
  for (int writes : {1, 2, 5, 8})
    for (int reads : {0, 2})
      for (SampleSize size : {SampleSize::small, SampleSize::lanes}) {
        Rng rng(43);
        check_gradients(memory_writes_sample(rng, size, writes, reads), size == SampleSize::small,
                        std::to_string(writes) + " writes, " + std::to_string(reads) + " reads" +
                            (size == SampleSize::small ? ", small" : ", lanes"));
      }
}

namespace {
// The memory after the writes plus j·R_j for every read (each read broadcast over the slots), so that the
// upstream gradient of M' is a full random memory; with `later`, also M ⊙ M, whose backward runs first.
Var writes_output(std::span<const Var> x, int writes, int reads, bool fused, bool later) {
  const auto K = std::size_t(writes), R = std::size_t(reads);
  std::array<Var, 16> w, e, a;
  for (std::size_t j = 0; j < K; ++j) w[j] = x[1 + 3 * j], e[j] = x[2 + 3 * j], a[j] = x[3 + 3 * j];
  const std::span<const Var> v = x.subspan(1 + 3 * K, R);
  std::array<Var, 16> out;
  if (fused) {
    memory_writes(x[0], v, std::span<const Var>(w.data(), K), std::span<const Var>(e.data(), K),
                  std::span<const Var>(a.data(), K), std::span<Var>(out.data(), R + 1));
  } else {
    for (std::size_t r = 0; r < R; ++r) out[1 + r] = memory_read(x[0], v[r]);
    out[0] = x[0];
    for (std::size_t j = 0; j < K; ++j) out[0] = memory_write(out[0], w[j], e[j], a[j]);
  }
  Var y = out[0];
  for (std::size_t r = 0; r < R; ++r) y = add(y, scale(out[1 + r], double(r + 1)));
  if (later) y = add(y, hadamard(x[0], x[0]));
  return y;
}
}  // namespace

TEST_CASE("memory_writes equals memory_read and the writes one after another, in values and every gradient",
          "[ops][heads]") {
  // Batches 16 and 19 (a full vector of lanes and a tail), 12 (a 256-bit and a 128-bit pass) and 3; 1, 2, 4 and 8 (periodic lanes on AVX-512: a
  // slot of 2x3 at batch 1 is one masked chunk, of 5x5 at 1 one full and one masked, at 8 a run of chunks);
  // slots of 2x3 (one partial block of elements) and 5x5 (two whole blocks of 12 and one of 1); writes fixed at
  // compile time (2..8) and not (1, 9, 16).
  struct Case {
    std::int64_t batch, rows, cols;
  };
  for (Case cs : {Case{16, 5, 5}, Case{19, 2, 3}, Case{12, 5, 5}, Case{3, 5, 5}, Case{1, 2, 3}, Case{1, 5, 5}, Case{2, 5, 5},
                  Case{4, 2, 3}, Case{8, 5, 5}})
    for (int writes : {1, 2, 3, 5, 8, 9, 16})
      for (int reads : {0, 1, 3})
        for (bool later : {false, true}) {
          Rng rng(std::uint64_t(100 * writes + reads));
          const std::int64_t B = cs.batch, N = 6;
          SampleDims d{B, 1, 1, 1, 1, N, cs.rows, cs.cols};
          OpSample fused;
          fused.inputs = {{"M", random_tensor(rng, memory(B, N, d.mem_rows, d.mem_cols))}};
          for (int j = 0; j < writes; ++j) {
            fused.inputs.push_back({"w", random_tensor(rng, weighting(B, N), 0.0, 1.0)});
            fused.inputs.push_back({"E", random_tensor(rng, matrices(B, d.mem_rows, d.mem_cols), 0.0, 1.0)});
            fused.inputs.push_back({"A", random_tensor(rng, matrices(B, d.mem_rows, d.mem_cols))});
          }
          for (int r = 0; r < reads; ++r) fused.inputs.push_back({"v", random_tensor(rng, weighting(B, N), 0.0, 1.0)});
          OpSample separate = fused;
          fused.apply = [=](Tape&, std::span<const Var> x) { return writes_output(x, writes, reads, true, later); };
          separate.apply = [=](Tape&, std::span<const Var> x) { return writes_output(x, writes, reads, false, later); };
          const std::string what = std::to_string(writes) + " writes, " + std::to_string(reads) + " reads, batch " +
                                   std::to_string(B) + ", slots " + std::to_string(cs.rows) + "x" +
                                   std::to_string(cs.cols) + (later ? ", grad_M added to" : ", grad_M assigned");
          check_close(run_in(DType::f64, separate, 9), run_in(DType::f64, fused, 9), 1e-12, what + ", float64");
          check_close(run_in(DType::f32, separate, 9), run_in(DType::f32, fused, 9), 1e-5, what + ", float32");
        }
}

TEST_CASE("memory_writes refuses no writes, more than 16, and operands that do not fit", "[ops][heads]") {
  Rng rng(3);
  const Tensor m = random_tensor(rng, memory(2, 4, 2, 3)), w = random_tensor(rng, weighting(2, 4)),
               e = random_tensor(rng, matrices(2, 2, 3)), bad = random_tensor(rng, matrices(2, 3, 2));
  Tape tape(DType::f64);
  const Var mv = tape.input(m), wv = tape.input(w), ev = tape.input(e), bv = tape.input(bad);
  CHECK_THROWS_WITH(memory_writes(mv, {}, {}, {}), Catch::Contains("memory_writes") && Catch::Contains("between 1 and 16"));
  const std::vector<Var> ws(17, wv), es(17, ev);
  CHECK_THROWS_WITH(memory_writes(mv, ws, es, es), Catch::Contains("between 1 and 16"));
  const std::array<Var, 2> w2{wv, wv}, e2{ev, bv};
  CHECK_THROWS_WITH(memory_writes(mv, w2, e2, e2), Catch::Contains("memory_writes"));
}
