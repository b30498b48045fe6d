/// @file
/// Trainer: one model on one task with one optimiser, step by step, from a resolved Config.
///
/// A step draws a batch from the task with the run's data Rng, unrolls the model on a tape, takes the mean
/// BCE over the target frames, backpropagates, checks that the loss and every gradient are finite, clips
/// (by value, then by global norm, as configured) and applies the optimiser, then checks that every
/// parameter and optimiser state is still finite. A non-finite loss or gradient changes nothing: the step is
/// re-run in anomaly mode to name the op that produced the first NaN/Inf. A non-finite update (a learning
/// rate large enough to overflow) is undone from a copy taken before it. Then, by the config key
/// `nonfinite`: "stop" (the default) throws a TrainingError naming the step and the op; "skip" counts the
/// step as done without an update (StepStats::skipped, skipped()) and throws once more than
/// `nonfinite.max_skips` steps were skipped. save() refuses to write a NaN or Inf.
///
/// Outlier gradients (config key grad.outlier = F > 0): a finite step whose gradient norm n_t (before clipping)
/// exceeds F times the running mean m of the norms before it is not applied either (StepStats::outlier,
/// outlier_skips()): a run that has learnt its task makes tiny gradients, RMSprop's and Adam's second moments
/// shrink with them, and one rare large gradient — clipped or not — then moves the parameters by many times a
/// usual step and can throw the solution away (models/results/stability.md). m is the bias-corrected
/// exponential mean m = s/(1 − βᶜ) of the norms, s ← βs + (1 − β)·min(n_t, F·m), β = 1 − 1/W (W =
/// grad.outlier_window), c the steps counted; the rule acts once c ≥ W. A skipped step adds F·m, not n_t, so a
/// lasting rise of the norm lifts m by a factor 1 + (F − 1)/W a step until the steps are applied again. A
/// non-finite step is handled by `nonfinite` first and counts for neither m nor outlier_skips(). The counters
/// are saved in checkpoints, so a resumed run skips what an uninterrupted one does.
///
/// Learning-rate decay once solved (config key lr.solved_below = b > 0): the applied steps are counted in
/// consecutive windows of W = lr.solved_window steps; at the end of the first window whose mean cost per
/// sequence (StepStats::bits) is below b, the learning rate is multiplied by f = lr.solved_factor for every later
/// step (StepStats::lr_decayed on the step that ends that window; lr_decayed_at()), on top of lr.schedule, and
/// stays so if the cost rises again. Its aim is the same as grad.outlier's: a run that has learnt its task takes
/// smaller steps, so one rare large gradient moves it less. Skipped steps (non-finite, outlier) count in no
/// window. The window's count and sum and the step of the decay are saved in checkpoints.
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
/// Curriculum (config key curriculum.threshold = θ > 0; Graves et al. 2014 and later NTM work train on short
/// sequences or few items first): the task's sizes {min, max} (Task::size_range: copy lengths, recall items)
/// are drawn from {min, level} instead, level = curriculum.start (or min) at first. After every applied step
/// the step's cost per sequence (bits, class errors or NMSE) joins a window; once the window holds
/// curriculum.window steps, level grows by one if their mean cost is below θ, and the window starts afresh.
/// At level = max the draws are sample_into's, the same numbers from the same Rng. The level and the window
/// are saved in checkpoints, so a resumed run draws what an uninterrupted one does.
///
/// save() writes DIR/checkpoint.safetensors atomically: parameters ("param/<name>"), optimiser state
/// ("optim/<name>/<slot>"), and metadata: step, the data Rng's state, the optimiser's step count and the
/// resolved config (and the curriculum's state). resume() restores all of it, so an interrupted and resumed
/// run equals an uninterrupted one bit for bit.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "matmem/autodiff/tape.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/tasks/tasks.hpp"
#include "matmem/models/training/early_stopping.hpp"
#include "matmem/models/training/optimizer.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

class BatchCollective;
class Communicator;
class ThreadTeam;

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
  bool skipped = false;     ///< the step was not applied: `nonfinite` says why, or `outlier` is set
  bool outlier = false;     ///< skipped for an outlier gradient norm (grad.outlier; see the file)
  double norm_mean = 0;     ///< with grad.outlier: the running mean of the norms the step was compared with
  bool lr_decayed = false;  ///< with lr.solved_below: this step ended the window that decayed the learning rate
  std::string nonfinite;    ///< what was not finite (empty when all was)
};

/// What a run will hold in memory at its longest sequence, estimated before training (see
/// Trainer::memory_estimate). Bytes as doubles: an absurd configuration must not overflow its own estimate.
struct MemoryEstimate {
  double bytes = 0;                ///< the whole process: what it holds now, the tapes and the batch's data
  double tape_bytes = 0;           ///< of which the tapes of a pass over the longest sequence
  double tape_bytes_per_frame = 0; ///< one sequence's tape per time step
  std::int64_t longest_frames = 0; ///< time steps of the longest sequence the task draws
  std::int64_t batch = 0;          ///< B
  std::int64_t micro_batch = 0;    ///< the sequences a pass runs (0: the whole batch), after micro_batch.state_kib
  double state_bytes = 0;          ///< one sequence's largest recorded value (an NTM's memory state)
  double available = 0;            ///< the machine's available memory (MemAvailable, or a cgroup's limit)
  std::string str() const;         ///< "about X GiB for …; Y GiB available"
};

/// A model's loss and cost over a whole part of a SplitTask's data, in batches of `batch` (the last one smaller),
/// without gradients: the mean loss per example, and the errors per example (for TargetKind::classes with one
/// target row, the error rate; accuracy = 1 − error).
struct SplitResult {
  double loss = 0, error = 0;  ///< mean loss and errors per example
  std::int64_t count = 0;      ///< examples evaluated
};
/// Evaluates `model` on part `split` of `task` (see SplitResult), on `tape`.
SplitResult evaluate_split(Model& model, Tape& tape, const SplitTask& task, Split split, std::int64_t batch);

/// The steps a run of this config trains: `steps`, or with `epochs` > 0 on a SplitTask, epochs × its steps
/// per epoch.
std::int64_t step_budget(const Config& config, const Task& task);

/// Trains one model on one task with one optimiser, step by step, from a resolved Config (see the file).
class Trainer {
 public:
  /// A trainer of the config's model, task and optimiser. `ranks`: the ranks of a distributed run (nullptr
  /// or one rank: this process trains alone).
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
                                                "lr.cosine_final", "clip.norm", "clip.value", "nonfinite",
                                                "nonfinite.max_skips", "grad.outlier", "grad.outlier_window",
                                                "lr.solved_below", "lr.solved_factor", "lr.solved_window",
                                                "log_every", "checkpoint_every"};

  /// One training step (see the file).
  StepStats step();
  std::int64_t steps_done() const { return step_; }  ///< steps done, over the whole run
  std::int64_t steps_total() const { return config_.integer("steps"); }  ///< the step budget
  std::int64_t skipped() const { return skipped_; }  ///< steps skipped for a NaN/Inf, over the whole run
  std::int64_t outlier_skips() const { return outlier_.skips; }  ///< steps skipped for an outlier gradient norm
  /// With lr.solved_below: the step after which the learning rate was multiplied by lr.solved_factor; −1: not
  /// (yet) decayed, or the rule is off.
  std::int64_t lr_decayed_at() const { return solved_.at; }
  /// The largest size a step draws under a curriculum (above); 0 without one.
  std::int64_t curriculum_level() const { return curriculum_.level; }

  /// Writes DIR/checkpoint.safetensors atomically (see the file); refuses a NaN or Inf.
  void save(const std::string& dir) const;

  /// Data sets and the graph task (a SplitTask): every eval.interval steps the validation part is evaluated
  /// after the step and early stopping (models/training/early_stopping.hpp) told its eval.metric (error or
  /// loss); the parameters of the best evaluation are kept, and written beside the checkpoint as
  /// best.safetensors (its metadata names the step; a file from a step other than the checkpoint's best is
  /// not read back). stopped() says to end the run. `epochs` > 0 in the config sets the step budget to
  /// epochs × the steps of an epoch. split_task() is the task as a SplitTask, or nullptr.
  const SplitTask* split_task() const { return dynamic_cast<const SplitTask*>(task_.get()); }
  bool evaluated() const { return evaluated_; }  ///< the last step evaluated the validation part
  const SplitResult& last_validation() const { return validation_; }  ///< the last validation result
  const EarlyStopping& early_stopping() const { return best_.rule(); }  ///< the stopping rule's state
  bool stopped() const { return best_.rule().stopped(); }  ///< early stopping says to end the run
  /// Evaluates the model on a whole part of the SplitTask's data.
  SplitResult evaluate(Split split);
  /// Puts the best evaluation's parameters into the model (training cannot go on from them); false when the
  /// run has none.
  bool restore_best() { return best_.restore(*model_); }

  Model& model() { return *model_; }                ///< the model trained
  const Task& task() const { return *task_; }       ///< the task it is trained on
  const Config& config() const { return config_; }  ///< the resolved config
  Optimizer& optimizer() { return *optimizer_; }    ///< the optimiser
  Tape& tape() { return tape_; }  ///< part 0's (the only one with one thread)
  Rng& data_rng() { return data_rng_; }  ///< the Rng the batches are drawn from
  int threads() const;  ///< the parts a step runs in: n' above (in this rank)
  int ranks() const;    ///< K above: 1 when not distributed
  /// The seconds the last step spent gathering and adding the ranks' gradients (0 when not distributed).
  double reduce_seconds() const { return reduce_seconds_; }
  /// With threads > 1, the seconds each part of the last step took on its thread (forward and backward of
  /// its micro-batches), in part order; the step waits for the slowest. Empty with one thread.
  const std::vector<double>& part_seconds() const { return part_seconds_; }
  /// The fewest sequences in a part. The memory ops' SIMD lanes run over the batch, and a part of 2 or 3
  /// sequences leaves most of them empty: the MatNTM copy step at batch 4 took 2.5 ms with one thread and
  /// 3.6 ms with two (parts of 2, then run as scalar passes; as the masked passes of ops::simd_loop since,
  /// a batch of 2 runs 0.975 of that), at batch 8 4.0 and 3.6 ms.
  static constexpr std::int64_t kMinPart = 4;
  /// The run's memory estimate, measured before training by two short probe passes on a tape of their own
  /// (batch min(B, 64), the task's two smallest sizes): a pass's arena bytes grow linearly with the
  /// sequence's time steps and the batch, so the probes give bytes per time step and sequence, extrapolated
  /// to the longest sequence and the whole batch, plus the data and what the process holds already. A run whose estimate exceeds the
  /// available memory is refused (config key memory.check) before it allocates.
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
  struct OutlierRule {  // grad.outlier (see the file)
    double factor = 0;    // F; 0: off
    double beta = 0;      // 1 − 1/W
    std::int64_t window = 0, count = 0, skips = 0;
    double sum = 0;       // s
    double mean() const;  // m, 0 before the first step
  } outlier_;
  // Costs taken in consecutive windows of `window` steps (the curriculum's and lr.solved_below's rule).
  struct WindowMean {
    std::int64_t window = 0, steps = 0;  // steps: counted in the current window
    double sum = 0;
    bool add(double cost, double& mean);  // true, with the window's mean, on the step that completes a window
  };
  struct SolvedDecay {  // lr.solved_below (see the file)
    double below = 0;    // b; 0: off
    double factor = 1;   // f
    WindowMean costs;
    std::int64_t at = -1;  // the step that decayed the rate; −1: not yet
  } solved_;
  struct Curriculum {
    double threshold = 0;  // 0: off
    std::int64_t min = 0, max = 0, level = 0;
    WindowMean costs;
  } curriculum_;
  BestParameters best_;
  // The step of the parameters in best.safetensors, and the directory it is in (a branched run writes its own).
  mutable std::int64_t best_written_ = -1;
  mutable std::string best_dir_;
  SplitResult validation_;
  bool evaluated_ = false;
  MemoryEstimate memory_;
  // Every tensor an update changes (parameters, then optimiser state), named, and a copy of each taken
  // before the update, to undo one that is not finite.
  std::vector<std::pair<std::string, Tensor*>> updated_;
  std::vector<Tensor> saved_;
  // The model's buffers (batch norm's running statistics), which a step's forward updates, and their copies
  // from before it.
  std::vector<std::pair<Tensor*, Tensor>> buffers_;
  std::unique_ptr<BatchCollective> collective_;  // threads > 1 or distributed: batch norm's sums over the parts
  // threads > 1: the batch's parts (part 0 runs model_ on tape_) and the team that runs them; else empty.
  struct Part;
  std::vector<std::unique_ptr<Part>> parts_;
  std::unique_ptr<ThreadTeam> team_;
  // Distributed: the ranks, this rank's part of the batch and its seed, and the buffers of the gather.
  const Communicator* ranks_ = nullptr;
  Sequence rank_part_;
  // A micro-batch of the model's part (micro_batch), and its backward seed.
  Sequence chunk_;
  Tensor seed_;
  std::vector<float> gradients_, gathered_;
  std::vector<double> sums_, gathered_sums_;
  double reduce_seconds_ = 0;
  std::vector<double> part_seconds_;
  double flops_ = 0;  // the last step's, over every part and micro-batch

  // The gradients of `seq`, a part of `total` sequences of the whole batch, over this rank's threads.
  void run_parallel(const Sequence& seq, std::int64_t total, StepStats& stats);
  void reduce_over_ranks(StepStats& stats);
  void set_anomaly_mode(bool on);
  void sample_batch();
  void advance_curriculum(double cost);
  bool advance_solved_decay(double cost);  // true on the step that decays the learning rate
  StepStats not_finite(StepStats& stats, const std::string& what);
  MemoryEstimate estimate_memory();
};

/// The optimiser the config names (key "optimizer": rmsprop, adam, sgd) with its settings, over `params`.
std::unique_ptr<Optimizer> make_optimizer(const Config& config, ParameterStore& params);

}  // namespace matmem
