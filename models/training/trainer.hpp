/// @file
/// Trainer: one model on one task with one optimiser, step by step, from a resolved Config.
///
/// A step draws a batch from the task with the run's data Rng, unrolls the model on a tape, takes the mean
/// BCE over the target frames, backpropagates, checks that the loss and every gradient are finite, scales the
/// gradient by `loss.reduction` (below), clips
/// (by value, then by global norm, as configured) and applies the optimiser, then checks that every
/// parameter and optimiser state is still finite. A non-finite loss or gradient changes nothing: the step is
/// re-run in anomaly mode to name the op that produced the first NaN/Inf. Then, by the config key
/// `nonfinite`: "stop" (the default) throws a TrainingError naming the step and the op; "skip" counts the
/// step as done without an update (StepStats::skipped, skipped()) and throws once more than
/// `nonfinite.max_skips` steps were skipped. A non-finite update (a learning rate large enough to overflow) is
/// handled alike: under "skip" the optimiser takes its updates whole or not at all (UpdateMode::whole), so it
/// changes nothing; under "stop", where such an update ends the run, it updates in place (UpdateMode::in_place,
/// the same values with about half the bytes moved) and the model holds that update in part. save() refuses to
/// write a NaN or Inf.
///
/// Training rules (models/training/rules/, models/training/README.md "Training rules"): the curriculum,
/// grad.outlier, lr.solved_below, early stopping and the best parameters are TrainingRules, built by make_rules()
/// in its order, which the trainer runs in that order at these points of a step, knowing none by name:
///   1. before the batch is drawn: the smallest of the rules' largest_size() bounds the size drawn (from the
///      task's smallest; none: the task's own draw, sample_step_into);
///   2. after a finite gradient, before clipping: every rule's on_gradient(); if one returns false, the update
///      is not applied and the step counts as done (StepStats::skipped; a non-finite step is handled by
///      `nonfinite` first and no rule sees it);
///   3. the update, at the learning rate of lr.schedule times the product of the rules' lr_factor();
///   4. after the update: every rule's after_step();
///   5. every eval.interval steps, after an applied step: the held-out data is evaluated (the validation part
///      of a SplitTask; for a generated task, eval.batches batches drawn once at the start from Rng(eval.seed)
///      by sample_into, the task's own sizes, the same every evaluation) and every rule's after_evaluation()
///      told its score (eval.metric: error, the cost per sequence, or loss);
///   6. stopped() when a rule's stop() says so.
/// The gradient's scale, config key `loss.reduction`: "mean" (the default), the gradient of the mean loss
/// L = (1/T) Σ_t mean_{b,i,j} ℓ_{t,b,i,j} over the T target frames; "sequence", the gradient of the cost summed
/// over each sequence's target elements and averaged over the batch, S = (1/B) Σ_b Σ_{t,i,j} ℓ_{t,b,i,j} =
/// E·L, with E = Σ_t r_t c_t the target elements a sequence (the target frames being of one size; refused
/// otherwise, and for a masked or non-BCE task). S is the cost Graves et al. 2014 report, in nats. Against
/// S's gradient L's is E times smaller, so an ε inside RMSprop's square root (spec/graves_ntm.md §1) weighs
/// E² times more; where it dominates, RMSprop is a plain SGD at lr/√ε. (On repeat copy, S did not make
/// Graves et al.'s RMSprop learn: models/results/graves-runs.md.) Clipping, grad.outlier and the logged
/// grad_norm see the scaled gradient; the logged loss stays L.
/// save() writes every rule's state() under its name() in the checkpoint's metadata (and its save_files()
/// first); resume() hands them back, so a resumed run's rules decide what an uninterrupted run's do.
///
/// With `threads` = n > 1 in the config, a step splits its batch of B into n' = min(n, ⌊B / kMinPart⌋)
/// contiguous parts of ⌊B/n'⌋ or ⌈B/n'⌉ sequences (n' = 1: no split) and runs each part's forward and
/// backward in its own thread (ThreadTeam), on its own tape, with its own copy of the model whose parameter
/// values are copied from the trainer's model before the step. Part k backpropagates its mean loss seeded
/// with B_k / B, so the parts' gradients, added into the model's in part order, are the gradient of the
/// whole batch's mean loss; clipping and the optimiser then run once, on the model. The sums are in a
/// different order than one thread's, so a run with n threads rounds differently from a run with one, but
/// is itself reproducible bit for bit.
///
/// Batch normalisation (ops/batch_norm.hpp) takes the whole batch's statistics however it is split: the parts'
/// sums meet in a BatchCollective (part order, then rank order), set for each part's thread by a
/// BatchNormScope, which also has the training pass update the running statistics. Those are the model's
/// buffers (Parameter::buffer: saved, resumed, kept in the best parameters and copied to the parts like
/// parameters, left out by the optimiser, clipping and the gradient norm); a step that is not finite puts them
/// back as they were before its forward. The memory estimate's probes run without a scope (nothing updated);
/// evaluate_split() normalises by the running statistics. Micro-batches are refused with batch norm.
///
/// Micro-batches (config key micro_batch = m > 0): a part of more than m sequences (the whole batch with one
/// thread) runs as micro-batches of m sequences and a last one of the rest, one after another on its tape, each backpropagated
/// with its share of the batch, their gradients added up in the model's: the same gradient as the part at once
/// up to rounding (the batch's sums are split differently), in a working set of m sequences, which a core's
/// caches hold where a large batch's does not (tools/results/training-speed.md, "Batch scaling"). Reproducible bit for bit.
/// m is halved (16, 8, 4, …) while m sequences' largest recorded value — an NTM memory, slots × rows × cols
/// floats per sequence, which every memory op streams — takes more than micro_batch.state_kib (default 320
/// KiB, a third of the reference machine's 1 MiB L2 per core; 0: no limit): the paper's 120 slots of 6×6 keep
/// 16 (270 KiB), 256 slots take 8, 512 slots 4 and 1024 slots 2, whose memory states then fit the L2 (at batch
/// 16, three alternating runs against micro-batches of 16: 1.21–1.45× the sequences/s at 1024 slots, 1.21–1.32×
/// at 512, 1.00–1.06× at 256; tools/results/training-speed.md "Batch scaling").
/// The largest value is measured on the memory estimate's probe passes (MemoryEstimate::state_bytes).
///
/// Distributed (a Communicator of K > 1 ranks, `mpirun -np K matmem train --distributed`): every rank draws
/// the same batch from the same data Rng and takes its contiguous part, sequences ⌊B·r/K⌋ to ⌊B·(r+1)/K⌋, which
/// it splits over its own threads as above, each part seeded with its share B_k / B of the whole batch. The
/// ranks' gradients (and weighted losses and bit counts) are then gathered to every rank (MPI_Allgather) and
/// added in rank order, g = g_0 + g_1 + … + g_{K−1}, the same additions on every rank, so every rank applies the
/// same update and holds the same parameters, and a K-rank run is reproducible bit for bit. With one thread a
/// rank, the additions are those of one process with K threads: the two runs are identical bit for bit
/// (tests/tools/distributed_test.cpp). An all-reduce (MPI_Allreduce) would move less data for large K, but MPI
/// does not fix the order of its additions.
///
/// save() writes DIR/checkpoint.safetensors atomically: parameters ("param/<name>"), optimiser state
/// ("optim/<name>/<slot>"), and metadata: step, the data Rng's state, the optimiser's step count and the
/// resolved config and the rules' states. resume() restores all of it, so an interrupted and resumed
/// run equals an uninterrupted one bit for bit.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matmem/autodiff/tape.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/tasks.hpp"
#include "matmem/models/training/evaluation.hpp"
#include "matmem/models/training/memory_estimate.hpp"
#include "matmem/models/training/optimizer.hpp"
#include "matmem/models/training/rules/rule.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

class Communicator;
class DataParallel;

/// A training step failed (a NaN or Inf under nonfinite = "stop", too many skipped steps); the message names
/// the step and the op.
struct TrainingError : Error {
  using Error::Error;
};

/// What one training step measured.
struct StepStats {
  double loss = 0, bits = 0, grad_norm = 0;  ///< the batch's mean loss, its cost per sequence, the gradient's norm
  /// The cross-entropy in bits per sequence, Σ over the target elements of −log₂ of the probability the
  /// outputs give the target (Graves et al. 2014's cost), batch mean: the loss × target elements a sequence
  /// / ln 2 for TargetKind::bits, the cost itself for TargetKind::probabilities; NaN for other kinds and for
  /// masked sequences, whose loss weights their sequences unequally.
  double xent_bits = 0;
  std::int64_t frames = 0;  ///< time steps of the sequence drawn
  /// The step was not applied: for a NaN/Inf (`nonfinite` says what), or a rule refused its update (`nonfinite`
  /// empty; the rule says why, Trainer::take_messages).
  bool skipped = false;
  std::string nonfinite;    ///< what was not finite (empty when all was)
};

/// The steps a run of this config trains: `steps`, or with `epochs` > 0 on a SplitTask, epochs × its steps
/// per epoch.
std::int64_t step_budget(const Config& config, const Task& task);

/// Trains one model on one task with one optimiser, step by step, from a resolved Config (see the file).
class Trainer {
 public:
  /// A trainer of the config's model, task and optimiser. `ranks`: the ranks of a distributed run (nullptr
  /// or one rank: this process trains alone).
  /// With `init` set, the model starts from that run's parameters (start_from).
  explicit Trainer(const Config& config, const Communicator* ranks = nullptr);
  ~Trainer();
  /// A trainer restored from DIR/checkpoint.safetensors; `steps` > 0 replaces the configured step budget and
  /// `threads` > 0 the configured threads.
  /// `sets` ("key=value") change the checkpoint's config for the steps to come: only the keys of
  /// kResumeKeys (the learning rate and its schedule, clipping, non-finite handling, logging), never the model,
  /// the task or its data.
  static std::unique_ptr<Trainer> resume(const std::string& dir, std::int64_t steps = 0, std::int64_t threads = 0,
                                         const Communicator* ranks = nullptr, std::span<const std::string> sets = {});
  /// The keys a resume may change.
  static constexpr const char* kResumeKeys[] = {"lr",         "lr.schedule", "lr.step_every", "lr.step_factor",
                                                "lr.cosine_final", "clip.norm", "clip.value", "clip.state_gradient", "nonfinite",
                                                "nonfinite.max_skips", "grad.outlier", "grad.outlier_window",
                                                "lr.solved_below", "lr.solved_factor", "lr.solved_window",
                                                "log_every", "checkpoint_every", "flush_denormals"};

  /// One training step (see the file).
  StepStats step();
  std::int64_t steps_done() const { return step_; }  ///< steps done, over the whole run
  std::int64_t steps_total() const { return config_.integer("steps"); }  ///< the step budget
  std::int64_t skipped() const { return skipped_; }  ///< steps skipped for a NaN/Inf, over the whole run
  /// The run's rules, in the order they run (see the file).
  const std::vector<std::unique_ptr<TrainingRule>>& rules() const { return rules_; }
  /// What the rules said since the last call (TrainingRule::take_messages), in rule order: whole log lines.
  std::vector<std::string> take_messages();
  /// Every rule's figures (TrainingRule::figures), in rule order: "best", "best_step", "outlier_skips", ….
  std::vector<std::pair<std::string, double>> figures() const;
  /// The figure `name` of a rule of the run, or `otherwise` when none gives it.
  double figure(std::string_view name, double otherwise) const;
  /// Updates not applied over the whole run: the steps skipped for a NaN/Inf and those the rules refused.
  std::int64_t skipped_updates() const;
  /// What the rules have to say at the end of the run (TrainingRule::summary), joined by "; "; empty: nothing.
  std::string summary() const;
  /// Whether the checkpoint whose metadata this is ended its run early (a rule's stop()), written by this
  /// version or an earlier one.
  static bool stopped_in(const std::map<std::string, std::string>& metadata);
  /// The first of the run's rules of type R (Curriculum, GradOutlier, …), or nullptr when the run has none (for
  /// tests of a rule; a caller that reports on rules uses the messages and figures above).
  template <class R>
  const R* rule() const {
    for (const auto& r : rules_)
      if (const R* p = dynamic_cast<const R*>(r.get())) return p;
    return nullptr;
  }

  /// Writes DIR/checkpoint.safetensors atomically (see the file); refuses a NaN or Inf.
  void save(const std::string& dir) const;

  /// Every eval.interval steps the held-out data is evaluated after the step (5. above) and the rules told;
  /// early stopping (rules/early_stopping.hpp) may stop the run, and the parameters of the best evaluation are
  /// kept (rules/best_parameters.hpp) and written beside the checkpoint as best.safetensors. stopped() says to
  /// end the run. `epochs` > 0 in the config sets a SplitTask's step budget to epochs × the steps of an epoch.
  /// split_task() is the task as a SplitTask, or nullptr.
  const SplitTask* split_task() const { return dynamic_cast<const SplitTask*>(task_.get()); }
  bool evaluated() const { return evaluated_; }  ///< the last step evaluated the held-out data
  const SplitResult& last_validation() const { return validation_; }  ///< the last evaluation's result
  bool stopped() const;  ///< a rule says to end the run
  /// Evaluates the model on a whole part of the SplitTask's data.
  SplitResult evaluate(Split split);
  /// Evaluates the model on the held-out data of step 5 above (a SplitTask's validation part, or the generated
  /// task's held-out batches; none without eval.interval on a generated task: a result of count 0).
  SplitResult evaluate_held_out();
  Model& model() { return *model_; }                ///< the model trained
  const Task& task() const { return *task_; }       ///< the task it is trained on
  const Config& config() const { return config_; }  ///< the resolved config
  Optimizer& optimizer() { return *optimizer_; }    ///< the optimiser
  Tape& tape() { return tape_; }  ///< part 0's (the only one with one thread)
  Rng& data_rng() { return data_rng_; }  ///< the Rng the batches are drawn from
  int threads() const;  ///< the parts a step runs in: n' above (in this rank)
  int ranks() const;    ///< K above: 1 when not distributed
  /// The seconds the last step spent gathering and adding the ranks' gradients (0 when not distributed).
  double reduce_seconds() const;
  /// With threads > 1, the seconds each part of the last step took on its thread (forward and backward of
  /// its micro-batches), in part order; the step waits for the slowest. Empty with one thread.
  const std::vector<double>& part_seconds() const;
  /// The fewest sequences in a part. The memory ops' SIMD lanes run over the batch, and a part of 2 or 3
  /// sequences leaves most of them empty: the MatNTM copy step at batch 4 took 2.5 ms with one thread and
  /// 3.6 ms with two (parts of 2, then run as scalar passes; as the masked passes of ops::simd_loop since,
  /// a batch of 2 runs 0.975 of that), at batch 8 4.0 and 3.6 ms.
  static constexpr std::int64_t kMinPart = 4;
  /// The run's memory estimate (models/training/memory_estimate.hpp), measured before training; a run whose
  /// estimate exceeds the available memory is refused (config key memory.check) before it allocates.
  const MemoryEstimate& memory_estimate() const { return memory_; }
  /// The FLOPs the last step's tapes recorded, forward and backward, over all parts and micro-batches.
  double step_flops() const;

 private:
  Config config_;
  std::unique_ptr<Task> task_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  Tape tape_;
  std::unique_ptr<Unroller> unroller_;
  Rng data_rng_;
  Sequence sequence_;  // reused: drawing a batch allocates nothing once the longest has been seen
  std::int64_t step_ = 0;
  std::int64_t skipped_ = 0;
  std::vector<std::unique_ptr<TrainingRule>> rules_;  // in the order they run (see the file)
  std::vector<Sequence> held_out_;  // a generated task's held-out batches (eval.interval > 0)
  SplitResult validation_;
  bool evaluated_ = false;
  MemoryEstimate memory_;
  // The model's buffers (batch norm's running statistics), which a step's forward updates, and their copies
  // from before it.
  std::vector<std::pair<Tensor*, Tensor>> buffers_;
  std::unique_ptr<DataParallel> parallel_;  // the batch's gradient over the threads and ranks
  double flops_ = 0;  // the last step's, over every part and micro-batch

  // resume(): the parameters come from the checkpoint, so `init` (which started the run) is not read again.
  Trainer(const Config& config, const Communicator* ranks, bool from_checkpoint);
  // The model's parameters from `source` (config key init): a run directory or a checkpoint or best-parameters
  // file, every parameter of the model by name, shape and element type, and none it lacks; refused naming the
  // file and the parameter.
  void start_from(const std::string& source);
  void set_anomaly_mode(bool on);
  void sample_batch();
  // A step that is not finite, under nonfinite's policy; `updated`: an update in place has left part of itself.
  StepStats not_finite(StepStats& stats, const std::string& what, bool updated = false);
  // Undoes a step's pass: the gradients zeroed, the buffers as they were before its forward.
  void discard_step();
};

}  // namespace matmem
