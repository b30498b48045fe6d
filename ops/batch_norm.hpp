/// @file
/// Batch normalisation (Ioffe & Szegedy 2015; 001 §4.1.1's deep nets) over a batch that may be split across
/// threads and ranks, and its running statistics for evaluation.
///
/// For x:[B,r,c], per matrix element (i, j), over the whole batch of N sequences:
///
///     μ_ij = (1/N) Σ_b x_bij,   σ²_ij = (1/N) Σ_b (x_bij − μ_ij)²,   s_ij = 1/√(σ²_ij + ε),
///     y_bij = (x_bij − μ_ij) s_ij                                                  (x̂, ops/batch_norm.cpp)
///     grad_x_bij += s_ij (g_bij − (1/N) Σ_b' g_b'ij − y_bij (1/N) Σ_b' g_b'ij y_b'ij)
///
/// The learned scale γ and shift β ([1,r,c], broadcast over the batch) are a hadamard and an add with
/// parameters, as for layer_norm: the model writes γ ⊙ batch_norm(x) + β.
///
/// A batch split into parts (the Trainer's threads, each on its own tape, and its ranks) still takes the whole
/// batch's statistics: the forward needs Σ_b x and Σ_b (x − μ)², the backward Σ_b g and Σ_b g·y, over every
/// part. A BatchCollective adds those partial sums: each part writes its own into its slot, waits for the
/// others, and adds the slots in part order (then, across ranks, gathers every rank's sum and adds them in rank
/// order, the same additions on every rank), so every part gets the same sums bit for bit, a run with K threads
/// is reproducible bit for bit, and one with K ranks of one thread each makes the same additions. Each part's
/// tape records the same ops in the same order (the same model on its share of the batch), so the k-th
/// batch_norm of every part meets the k-th of the others; a part must not record a batch_norm the others do
/// not. A part whose pass fails (an exception) calls abort(): every part waiting for a sum, or arriving at one
/// later, throws BatchCollectiveAborted, so no part waits for one that will not come; the caller reports the
/// failed part's own error and calls reset() once every part has left. (Across ranks the collective cannot
/// wake another rank waiting in its MPI call: a rank that fails ends the run.)
///
/// The thread's BatchNormContext (set by a BatchNormScope) says how batch_norm(x, running) runs: on the batch's
/// statistics (training), through a collective and part index or over its own batch, updating the running
/// statistics or not; or on the running statistics (evaluation). The op records the collective and part at
/// forward, so its backward uses them wherever it runs. Without a scope: the op's own batch, nothing updated
/// (a plain tape, gradcheck, the memory estimate's probes).
///
/// Running statistics (as PyTorch's BatchNorm): momentum m = 0.1, mean ← (1 − m) mean + m μ and
/// var ← (1 − m) var + m σ² N/(N − 1) (the unbiased variance; N = 1: σ²), starting at 0 and 1; in evaluation
/// y = (x − mean)/√(var + ε).
#pragma once
#include <cstdint>
#include <memory>

#include "matmem/autodiff/tape.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

class Communicator;

/// Thrown by BatchCollective::sum() in a part when another part has failed (BatchCollective::abort()).
struct BatchCollectiveAborted : Error {
  using Error::Error;
};

/// Adds partial sums over the parts of one batch, in part order and then rank order (see the file).
class BatchCollective {
 public:
  /// A collective of `parts` threads in this process (≥ 1) and, with `ranks` of more than one rank, across
  /// the ranks (each rank's collective calls MPI from its part 0).
  explicit BatchCollective(int parts, const Communicator* ranks = nullptr);
  ~BatchCollective();  ///< frees the slots
  BatchCollective(const BatchCollective&) = delete;
  BatchCollective& operator=(const BatchCollective&) = delete;
  int parts() const { return parts_; }  ///< threads in this process
  /// Called by every part with its own `values` (n of them, the same n): replaces them by the sum over all
  /// parts and ranks, added in part order and then rank order. Blocks until every part has called.
  /// Throws BatchCollectiveAborted, at once or when woken, if the collective has been aborted.
  void sum(int part, double* values, std::size_t n);
  /// Marks the collective failed and wakes every part waiting in sum(), which throws; called by a part that
  /// leaves with an exception (any thread, any number of times).
  void abort();
  bool failed() const;  ///< abort() has been called since the last reset()
  /// Makes an aborted collective usable again: to be called when no part is inside sum().
  void reset();

 private:
  struct Shared;
  int parts_;
  const Communicator* ranks_;
  std::unique_ptr<Shared> shared_;
};

/// Which statistics batch_norm(x, running) normalises with.
enum class BatchNormMode {
  batch,    ///< the batch's (training)
  running,  ///< the running averages (evaluation)
};

/// How the calling thread's batch_norm(x, running) runs (see the file); set by BatchNormScope.
struct BatchNormContext {
  BatchNormMode mode = BatchNormMode::batch;  ///< batch statistics or running ones
  bool update_running = false;                ///< mode batch: update the running statistics
  BatchCollective* collective = nullptr;      ///< the batch's parts (nullptr: the op's own batch is the batch)
  int part = 0;                               ///< this thread's part of the collective
  /// The sequences of this part: a pass of another batch size (a micro-batch) is refused, since its
  /// statistics would not be the batch's. 0: any.
  std::int64_t part_batch = 0;
};

/// The calling thread's context (a default one outside every BatchNormScope).
const BatchNormContext& batch_norm_context();

/// Sets the calling thread's BatchNormContext for its lifetime (restores the previous one on exit).
class BatchNormScope {
 public:
  /// Sets `context` as the calling thread's.
  explicit BatchNormScope(const BatchNormContext& context);
  ~BatchNormScope();  ///< restores the previous context
  BatchNormScope(const BatchNormScope&) = delete;
  BatchNormScope& operator=(const BatchNormScope&) = delete;

 private:
  BatchNormContext previous_;
};

/// A layer's running statistics (tensors [1,r,c] of the tape's dtype, owned by the model: non-learned
/// parameters, Parameter::buffer) and the momentum of their update.
struct BatchNormRunning {
  Tensor* mean = nullptr;  ///< starts at 0
  Tensor* var = nullptr;   ///< starts at 1
  double momentum = 0.1;   ///< m above
};

/// batch_norm with running statistics, as the thread's BatchNormContext says (see the file).
/// x:[B,r,c] -> [B,r,c].
Var batch_norm(Var x, const BatchNormRunning& running, double eps = 1e-5);

}  // namespace matmem
