// batch_norm: normalise each matrix element over the batch (Ioffe & Szegedy 2015), the math in
// ops/batch_norm.hpp:
//   μ = (1/N) Σ_b x_b,  σ² = (1/N) Σ_b (x_b − μ)²,  s = 1/√(σ² + ε),  y_b = (x_b − μ) s;
//   grad_x_b += s (g_b − (1/N) Σ_b' g_b' − y_b (1/N) Σ_b' g_b' y_b')                  per element (i, j)
// and, on running statistics (evaluation), y_b = (x_b − mean) s with s = 1/√(var + ε), grad_x_b += s g_b.
// x:[B,r,c] -> [B,r,c]; a memory is refused. No γ and β here: the model applies them with hadamard and add.
//
// attrs: i[0] the mode (0 batch, 1 running), i[1] the BatchCollective (a pointer, 0: none), f[0] ε, f[1] the
// part. Batch mode saves s, μ, σ² (r·c each) and N; backward reuses the output y. Its sums are in double, over
// the batch in order b = 0..B−1 for each element; with a collective each part's sums are then added in part
// order (BatchCollective::sum), also in the backward, which therefore runs even when x needs no gradient.
//
// Layout (runtime/shape.hpp): element (b, i, j) is at (i·B + b)·c + j, so for each row i the batch's c-long
// rows follow one another and a sum over b runs along contiguous rows.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "matmem/ops/batch_norm.hpp"
#include "matmem/ops/check.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/communicator.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

// --- BatchCollective -----------------------------------------------------------------------------------------
// Two sets of slots used in turn (call parity), so one barrier a call suffices: a part that writes the set of
// call n + 2 has passed the barrier of call n + 1, which every part reaches only after reading call n's.
// The barrier is a generation counter under a mutex that abort() can break: a waiting part spins a little on
// the generation (a step's sums come every few microseconds), then sleeps on the condition variable.
struct BatchCollective::Shared {
  explicit Shared(int parts) : parts(parts), slots{std::vector<std::vector<double>>(std::size_t(parts)),
                                                   std::vector<std::vector<double>>(std::size_t(parts))} {}
  const int parts;
  std::mutex mutex;
  std::condition_variable wake;
  int arrived = 0;                       // parts at the barrier of this generation
  std::atomic<std::uint64_t> generation{0};
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> slots[2];
  std::vector<double> ranks_in[2], ranks_out[2];  // distributed: this rank's sum, and every rank's
  std::vector<int> calls;                         // per part: its calls so far (the parity)

  [[noreturn]] static void throw_aborted() {
    throw BatchCollectiveAborted("batch_norm: another part of the batch failed, so its statistics cannot be summed");
  }
  void arrive_and_wait() {
    if (failed.load(std::memory_order_acquire)) throw_aborted();
    std::unique_lock lock(mutex);
    const std::uint64_t g = generation.load(std::memory_order_relaxed);
    if (++arrived == parts) {
      arrived = 0;
      generation.store(g + 1, std::memory_order_release);
      lock.unlock();
      wake.notify_all();
      return;
    }
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    while (generation.load(std::memory_order_acquire) == g && !failed.load(std::memory_order_acquire))
      if (std::chrono::steady_clock::now() - start > std::chrono::microseconds(200)) {
        lock.lock();
        wake.wait(lock, [&] { return generation.load() != g || failed.load(); });
        break;
      }
    if (generation.load(std::memory_order_acquire) == g) throw_aborted();  // failed before every part arrived
  }
};

BatchCollective::BatchCollective(int parts, const Communicator* ranks)
    : parts_(parts), ranks_(ranks && ranks->size() > 1 ? ranks : nullptr) {
  if (parts < 1) throw Error(fmt::format("BatchCollective: {} parts (≥ 1 expected)", parts));
  shared_ = std::make_unique<Shared>(parts);
  shared_->calls.assign(std::size_t(parts), 0);
}

BatchCollective::~BatchCollective() = default;

void BatchCollective::abort() {
  Shared& s = *shared_;
  {
    std::lock_guard lock(s.mutex);
    s.failed.store(true, std::memory_order_release);
  }
  s.wake.notify_all();
}

bool BatchCollective::failed() const { return shared_->failed.load(std::memory_order_acquire); }

void BatchCollective::reset() {
  Shared& s = *shared_;
  std::lock_guard lock(s.mutex);
  s.arrived = 0;
  s.calls.assign(std::size_t(parts_), 0);
  s.failed.store(false, std::memory_order_release);
}

void BatchCollective::sum(int part, double* values, std::size_t n) {
  Shared& s = *shared_;
  const int parity = s.calls[std::size_t(part)]++ & 1;
  if (parts_ > 1) {
    std::vector<double>& mine = s.slots[parity][std::size_t(part)];
    mine.assign(values, values + n);
    s.arrive_and_wait();
    for (std::size_t e = 0; e < n; ++e) values[e] = 0;
    for (int k = 0; k < parts_; ++k) {
      const double* v = s.slots[parity][std::size_t(k)].data();
      for (std::size_t e = 0; e < n; ++e) values[e] += v[e];
    }
  }
  if (!ranks_) return;
  // Every part holds the rank's sum; part 0 gathers the ranks' and adds them in rank order.
  std::vector<double>&in = s.ranks_in[parity], &out = s.ranks_out[parity];
  if (part == 0) {
    const std::size_t K = std::size_t(ranks_->size());
    in.assign(values, values + n);
    out.resize(n * K);
    ranks_->allgather(in.data(), n, out.data());
    for (std::size_t e = 0; e < n; ++e) in[e] = 0;
    for (std::size_t r = 0; r < K; ++r)
      for (std::size_t e = 0; e < n; ++e) in[e] += out[r * n + e];
  }
  if (parts_ > 1) s.arrive_and_wait();
  std::memcpy(values, in.data(), n * sizeof(double));
}

// --- the thread's context ------------------------------------------------------------------------------------
namespace {
thread_local BatchNormContext current_context;
}

const BatchNormContext& batch_norm_context() { return current_context; }

BatchNormScope::BatchNormScope(const BatchNormContext& context) : previous_(current_context) {
  current_context = context;
}
BatchNormScope::~BatchNormScope() { current_context = previous_; }

// --- the op --------------------------------------------------------------------------------------------------
namespace {
enum : std::int64_t { kBatch = 0, kRunning = 1 };

BatchCollective* collective_of(const OpAttrs& a) { return reinterpret_cast<BatchCollective*>(a.i[1]); }

template <class T>
struct BatchNormKernel {
  // acc[i·c + j] += Σ_b f(b, i, j) over the batch, in order b = 0..B−1.
  template <class F>
  static void batch_sum(const Shape& s, double* acc, F f) {
    const std::int64_t B = s.batch, r = s.rows, c = s.cols;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t o = (i * B + b) * c;
        double* a = acc + i * c;
        for (std::int64_t j = 0; j < c; ++j) a[j] += f(o + j);
      }
  }
  static void reduce(const OpCall<T>& c, double* values, std::size_t n) {
    if (BatchCollective* coll = collective_of(c.attrs)) coll->sum(int(c.attrs.f[1]), values, n);
  }

  static void forward(const OpCall<T>& c) {
    const Shape& s = c.y_shape;
    const std::int64_t B = s.batch, R = s.rows, C = s.cols, n = R * C;
    const T* x = c.x[0];
    T* y = c.y;
    if (c.attrs.i[0] == kRunning) {
      const T *mean = c.x[1], *var = c.x[2];
      for (std::int64_t e = 0; e < n; ++e) c.saved[e] = T(1.0 / std::sqrt(double(var[e]) + c.attrs.f[0]));
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t j = 0, o = (i * B + b) * C; j < C; ++j)
            y[o + j] = T((double(x[o + j]) - double(mean[i * C + j])) * double(c.saved[i * C + j]));
      return;
    }
    double* acc = reinterpret_cast<double*>(c.scratch);  // n + 1 sums, then n means
    double* mu = acc + n + 1;
    std::fill(acc, acc + n, 0.0);
    batch_sum(s, acc, [&](std::int64_t k) { return double(x[k]); });
    acc[n] = double(B);
    reduce(c, acc, std::size_t(n + 1));
    const double N = acc[n];
    for (std::int64_t e = 0; e < n; ++e) mu[e] = acc[e] / N;
    std::fill(acc, acc + n, 0.0);  // two passes: no cancellation for a large mean
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0, o = (i * B + b) * C; j < C; ++j) {
          const double d = double(x[o + j]) - mu[i * C + j];
          acc[i * C + j] += d * d;
        }
    reduce(c, acc, std::size_t(n));
    T *sv = c.saved, *mv = c.saved + n, *vv = c.saved + 2 * n;
    for (std::int64_t e = 0; e < n; ++e) {
      const double var = acc[e] / N;
      acc[e] = 1.0 / std::sqrt(var + c.attrs.f[0]);
      sv[e] = T(acc[e]), mv[e] = T(mu[e]), vv[e] = T(var);
    }
    c.saved[3 * n] = T(N);
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0, o = (i * B + b) * C; j < C; ++j)
          y[o + j] = T((double(x[o + j]) - mu[i * C + j]) * acc[i * C + j]);
  }

  static void backward(const OpCall<T>& c) {
    const Shape& s = c.y_shape;
    const std::int64_t B = s.batch, R = s.rows, C = s.cols, n = R * C;
    T* gx = c.grad_x[0];
    const T *gy = c.grad_y, *y = c.y, *sv = c.saved;
    if (c.attrs.i[0] == kRunning) {
      if (!gx) return;
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t j = 0, o = (i * B + b) * C; j < C; ++j) gx[o + j] += gy[o + j] * sv[i * C + j];
      return;
    }
    double* acc = reinterpret_cast<double*>(c.scratch);  // Σ g, then Σ g y
    std::fill(acc, acc + 2 * n, 0.0);
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0, o = (i * B + b) * C; j < C; ++j) {
          acc[i * C + j] += double(gy[o + j]);
          acc[n + i * C + j] += double(gy[o + j]) * double(y[o + j]);
        }
    reduce(c, acc, std::size_t(2 * n));  // every part, so that the parts' sums meet
    if (!gx) return;
    const double N = double(c.saved[3 * n]);
    for (std::int64_t e = 0; e < 2 * n; ++e) acc[e] /= N;
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t j = 0, o = (i * B + b) * C; j < C; ++j) {
          const std::int64_t e = i * C + j;
          gx[o + j] += T(double(sv[e]) * (double(gy[o + j]) - acc[e] - double(y[o + j]) * acc[n + e]));
        }
  }
};
Flops flops(const Shape*, int, const Shape& y, const OpAttrs& a) {
  return a.i[0] == kRunning ? Flops{2.0 * y.numel(), 1.0 * y.numel()} : Flops{5.0 * y.numel(), 7.0 * y.numel()};
}
constexpr OpDef kOp = make_op<BatchNormKernel>("batch_norm", flops);

void check_operand(Var x, double eps) {
  if (!x.valid()) throw Error("batch_norm: the operand is an empty Var");
  if (x.shape().slots != 1) ops::shape_error("batch_norm", "expects a batch of matrices [B,r,c], not a memory", x);
  if (!(eps > 0)) throw Error(fmt::format("batch_norm: ε must be > 0, got {}", eps));
}

// Batch statistics through `collective` (part `part`), or over x's own batch.
Var batch_statistics(Var x, double eps, BatchCollective* collective, int part) {
  const Shape& s = x.shape();
  const std::int64_t n = s.rows * s.cols;
  OpAttrs attrs;
  attrs.i[0] = kBatch;
  attrs.i[1] = std::int64_t(reinterpret_cast<std::intptr_t>(collective));
  attrs.f[0] = eps;
  attrs.f[1] = double(part);
  // scratch: 2n + 1 doubles, in elements of the tape's type
  const std::int64_t per_double = x.dtype() == DType::f32 ? 2 : 1;
  return x.tape->apply(kOp, {x}, s, attrs, 3 * n + 1, (2 * n + 1) * per_double);
}
}  // namespace

Var batch_norm(Var x, double eps) {
  check_operand(x, eps);
  return batch_statistics(x, eps, nullptr, 0);
}

Var batch_norm(Var x, const BatchNormRunning& running, double eps) {
  check_operand(x, eps);
  const Shape& s = x.shape();
  const Shape p = parameter(s.rows, s.cols);
  if (!running.mean || !running.var || running.mean->shape() != p || running.var->shape() != p ||
      running.mean->dtype() != x.dtype() || running.var->dtype() != x.dtype())
    throw ShapeError(fmt::format("batch_norm: running statistics must be two {} tensors {} for x {}",
                                 name_of(x.dtype()), p.str(), s.str()));
  const BatchNormContext& ctx = batch_norm_context();
  if (ctx.mode == BatchNormMode::running) {
    OpAttrs attrs;
    attrs.i[0] = kRunning;
    attrs.f[0] = eps;
    return x.tape->apply(kOp, {x, x.tape->input(*running.mean), x.tape->input(*running.var)}, s, attrs, s.rows * s.cols);
  }
  if (ctx.part_batch > 0 && s.batch != ctx.part_batch)
    throw Error(fmt::format("batch_norm: a pass of {} sequences in a part of {}: micro-batches (micro_batch) cannot "
                            "take the whole batch's statistics",
                            s.batch, ctx.part_batch));
  Var y = batch_statistics(x, eps, ctx.collective, ctx.part);
  if (ctx.update_running) {
    const std::int64_t n = s.rows * s.cols;
    const double m = running.momentum;
    dispatch(x.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* saved = static_cast<const T*>(x.tape->node(y.id).saved);
      const double N = double(saved[3 * n]), unbiased = N > 1 ? N / (N - 1) : 1.0;
      T *mean = running.mean->view<T>().data, *var = running.var->view<T>().data;
      for (std::int64_t e = 0; e < n; ++e) {
        mean[e] = T((1 - m) * double(mean[e]) + m * double(saved[n + e]));
        var[e] = T((1 - m) * double(var[e]) + m * double(saved[2 * n + e]) * unbiased);
      }
    });
  }
  return y;
}

OpEntry batch_norm_entry() {
  // Values in [-1, 2] so that the elements' means are far from 0; a batch above 2 so that every element's
  // statistics couple several samples.
  return {"batch_norm", [](Rng& rng, SampleSize size) {
            const SampleDims d = sample_dims(size);
            OpSample s;
            s.inputs = {{"x", random_tensor(rng, matrices(std::max<std::int64_t>(d.batch, 3), d.rows, d.cols), -1.0, 2.0)}};
            s.apply = [](Tape&, std::span<const Var> v) { return batch_norm(v[0]); };
            return s;
          }};
}

}  // namespace matmem
