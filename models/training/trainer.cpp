#include "matmem/models/training/trainer.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <filesystem>
#include <fstream>
#include <optional>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "matmem/models/plugin.hpp"
#include "matmem/models/training/adam.hpp"
#include "matmem/models/training/clip.hpp"
#include "matmem/models/training/rmsprop.hpp"
#include "matmem/models/training/rules/registry.hpp"
#include "matmem/models/training/schedule.hpp"
#include "matmem/models/training/sgd.hpp"
#include "matmem/ops/batch_norm.hpp"
#include "matmem/runtime/communicator.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/runtime/sysfs.hpp"
#include "matmem/runtime/thread_team.hpp"

namespace matmem {

namespace {
constexpr double kGiB = double(1 << 30);
}

std::unique_ptr<Optimizer> make_optimizer(const Config& c, ParameterStore& params) {
  const std::string name = c.str("optimizer");
  const double lr = c.num("lr"), wd = c.num("weight_decay");
  if (!(lr > 0)) throw Error(fmt::format("config: lr = {} must be > 0", lr));
  if (name == "rmsprop")
    return std::make_unique<RMSprop>(params, RMSpropOptions{lr, c.num("rmsprop.alpha"), c.num("rmsprop.momentum"),
                                                            c.num("rmsprop.eps"), wd, c.flag("rmsprop.centered"),
                                                            c.flag("rmsprop.eps_inside")});
  if (name == "adam")
    return std::make_unique<Adam>(params, AdamOptions{lr, c.num("adam.beta1"), c.num("adam.beta2"), c.num("adam.eps"), wd});
  if (name == "sgd") return std::make_unique<SGD>(params, SGDOptions{lr, c.num("sgd.momentum"), wd});
  throw Error(fmt::format("config: unknown optimizer {} (rmsprop, adam or sgd)", name));
}

namespace {
constexpr std::int64_t kMaxHeldOutBatches = 100000;  // eval.batches: held in memory for the whole run

void validate(const Config& c) {
  auto positive = [&](const char* key) {
    if (c.integer(key) < 1) throw Error(fmt::format("config: {} = {} must be ≥ 1", key, c.integer(key)));
  };
  positive("steps");
  positive("batch");
  positive("log_every");
  positive("threads");
  if (c.integer("epochs") < 0) throw Error(fmt::format("config: epochs = {} must be ≥ 0 (0: steps counts)", c.integer("epochs")));
  if (c.integer("eval.interval") < 0)
    throw Error(fmt::format("config: eval.interval = {} must be ≥ 0 (0: no evaluation)", c.integer("eval.interval")));
  if (c.integer("eval.patience") < 0)
    throw Error(fmt::format("config: eval.patience = {} must be ≥ 0 (0: never stop early)", c.integer("eval.patience")));
  check_lr_schedule(c);
  if (c.str("eval.metric") != "error" && c.str("eval.metric") != "loss")
    throw Error(fmt::format("config: eval.metric = \"{}\" must be \"error\" or \"loss\"", c.str("eval.metric")));
  if (c.integer("eval.batch") < 1) throw Error(fmt::format("config: eval.batch = {} must be ≥ 1", c.integer("eval.batch")));
  if (c.integer("eval.batches") < 1 || c.integer("eval.batches") > kMaxHeldOutBatches)
    throw Error(fmt::format("config: eval.batches = {} must be from 1 to {}", c.integer("eval.batches"),
                            kMaxHeldOutBatches));
  if (c.integer("eval.seed") < 0) throw Error(fmt::format("config: eval.seed = {} must be ≥ 0", c.integer("eval.seed")));
  if (c.integer("seed") < 0) throw Error(fmt::format("config: seed = {} must be ≥ 0", c.integer("seed")));
  if (c.integer("checkpoint_every") < 0) throw Error("config: checkpoint_every must be ≥ 0");
  if (c.integer("micro_batch") < 0)
    throw Error(fmt::format("config: micro_batch = {} must be ≥ 0 (0: the whole batch at once)", c.integer("micro_batch")));
  if (c.integer("micro_batch.state_kib") < 0)
    throw Error(fmt::format("config: micro_batch.state_kib = {} must be ≥ 0 (0: no limit)",
                            c.integer("micro_batch.state_kib")));
  // A micro-batch's statistics would not be the batch's (ops/batch_norm.hpp).
  if ((c.str("model") == "ffn" || c.str("model") == "autoencoder") && c.str("ffn.norm") == "batch" &&
      c.integer("micro_batch") > 0 && c.integer("micro_batch") < c.integer("batch"))
    throw Error(fmt::format("config: micro_batch = {} with ffn.norm = batch: batch norm takes the statistics of the "
                            "whole batch of {}, not of micro-batches (set micro_batch = 0)",
                            c.integer("micro_batch"), c.integer("batch")));
  if (c.num("clip.value") < 0 || c.num("clip.norm") < 0) throw Error("config: clip.value and clip.norm must be ≥ 0");
  if (c.str("loss.reduction") != "mean" && c.str("loss.reduction") != "sequence")
    throw Error(fmt::format("config: loss.reduction = \"{}\" must be \"mean\" or \"sequence\"", c.str("loss.reduction")));
  if (c.str("nonfinite") != "stop" && c.str("nonfinite") != "skip")
    throw Error(fmt::format("config: nonfinite = \"{}\" must be \"stop\" or \"skip\"", c.str("nonfinite")));
  if (c.integer("nonfinite.max_skips") < 0)
    throw Error(fmt::format("config: nonfinite.max_skips = {} must be ≥ 0", c.integer("nonfinite.max_skips")));
}
// The data stream is its own Rng, derived from the seed, so it does not depend on how many parameters
// the model initialised.
Rng data_rng_for(std::int64_t seed) { return Rng(std::uint64_t(seed) ^ 0x5eed5eed5eed5eedULL); }

// The first tensor of `tensors` holding a NaN or an Inf, or nullptr.
template <class Named>
const std::string* first_nonfinite(const Named& tensors) {
  for (const auto& named : tensors)
    if (!named.second->all_finite()) return &named.first;
  return nullptr;
}

// The target elements of one sequence of `seq`, over every target step.
double elements_per_sequence(const Sequence& seq) {
  double elements = 0;
  for (const Tensor& t : seq.targets) elements += double(t.shape().rows * t.shape().cols);
  return elements;
}

// E, the target elements a sequence of `seq` (Trainer, loss.reduction = sequence): refused where the target
// frames differ in size, carry a lane mask, or are not BCE's.
double target_elements(const Sequence& seq) {
  if ((seq.kind != TargetKind::bits && seq.kind != TargetKind::probabilities) || !seq.lane_mask.empty())
    throw Error("config: loss.reduction = \"sequence\" needs a task of unmasked bit or probability targets "
                "(BCE); this one's are masked or of another kind (use \"mean\")");
  for (const Tensor& t : seq.targets)
    if (t.shape().rows * t.shape().cols != seq.targets[0].shape().rows * seq.targets[0].shape().cols)
      throw Error(fmt::format("config: loss.reduction = \"sequence\" needs target frames of one size; this "
                              "sequence has {}×{} and {}×{}", seq.targets[0].shape().rows,
                              seq.targets[0].shape().cols, t.shape().rows, t.shape().cols));
  return elements_per_sequence(seq);
}

// The model's gradients of `seq`'s mean loss: zeroed, the sequence unrolled on `tape`, the loss
// backpropagated.
const SequenceResult& forward_backward(Model& model, Unroller& unroller, Tape& tape, const Sequence& seq) {
  model.params().zero_grad();
  const SequenceResult& r = unroller.run(seq);
  tape.backward(r.loss);
  return r;
}

// The weighted loss and bit count of a part of the batch.
struct PartResult {
  double loss = 0, bits = 0;
  double flops = 0;  // recorded by the tape over every micro-batch, forward and backward
};

// The gradients of `seq`, a part of a batch of `total` sequences, in the model's (zeroed first), as those of
// the whole batch's mean loss: in micro-batches of `micro` sequences and a last one of the rest (0: all at
// once; whole micro-batches fill the memory ops' SIMD lanes), run one after another on `tape`, each backpropagated with its share
// count / total, so that their gradients add up in the model's. `chunk` and `seed` are kept by the caller.
PartResult part_gradients(Model& model, Unroller& unroller, Tape& tape, const Sequence& seq, std::int64_t total,
                          std::int64_t micro, Sequence& chunk, Tensor& seed) {
  model.params().zero_grad();
  const std::int64_t B = seq.inputs[0].shape().batch;
  const std::int64_t m = micro > 0 && micro < B ? micro : B, n = (B + m - 1) / m;
  PartResult out;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t first = k * m, count = std::min(m, B - first);
    if (n > 1) batch_slice(seq, first, count, chunk);
    const SequenceResult& r = unroller.run(n > 1 ? chunk : seq);
    const double weight = double(count) / double(total);
    if (weight == 1.0) {
      tape.backward(r.loss);
    } else {
      seed.fill(weight);
      tape.backward(r.loss, seed);
    }
    out.loss += weight * r.loss.item();
    out.bits += weight * r.bits;
    out.flops += tape.flops().total();  // the next micro-batch's run clears the tape
  }
  return out;
}
}  // namespace

// A part of the batch and what runs it: part 0 the trainer's model, tape and unroller; every other part its
// own copy of the model (parameter values copied in before each step), tape and unroller.
struct Trainer::Part {
  Model* model = nullptr;
  Tape* tape = nullptr;
  Unroller* unroller = nullptr;
  std::unique_ptr<Model> own_model;
  std::unique_ptr<Tape> own_tape;
  std::unique_ptr<Unroller> own_unroller;
  Sequence slice;  // the part's sequences of the batch
  Sequence chunk;  // a micro-batch of them
  Tensor seed;     // [1] holding B_k / B, the loss's backward seed
  double weight = 0, loss = 0, bits = 0, flops = 0;
  std::exception_ptr error;  // the exception the part's pass left with, if any
  bool aborted = false;      // that exception is the collective's abort (another part failed first)
};

Trainer::Trainer(const Config& config, const Communicator* ranks)
    : config_(config), tape_(DType::f32), data_rng_(data_rng_for(config.integer("seed"))),
      ranks_(ranks && ranks->size() > 1 ? ranks : nullptr) {
  validate(config_);
  task_ = make_task(config_);
  config_.set_json("steps", step_budget(config_, *task_), "epochs");
  model_ = make_model(config_, *task_, DType::f32);
  rules_ = make_rules(config_, *task_);
  // A generated task's held-out batches (5. in the file): drawn once, from their own Rng, at the task's sizes.
  if (!split_task() && config_.integer("eval.interval") > 0) {
    Rng held_out(std::uint64_t(config_.integer("eval.seed")));
    held_out_.resize(std::size_t(config_.integer("eval.batches")));
    for (Sequence& seq : held_out_) task_->sample_into(held_out, seq, DType::f32);
  }
  if (config_.str("loss.reduction") == "sequence") {  // refused now rather than at the first step
    Rng probe(0);  // not the data stream, which stays the run's
    Sequence seq;
    task_->sample_into(probe, seq, DType::f32);
    target_elements(seq);
  }
  memory_ = estimate_memory();
  if (config_.flag("memory.check") && memory_.bytes > memory_.available)
    throw Error(fmt::format("memory: this run needs about {:.1f} GiB at its longest sequence ({} time steps × batch "
                            "{}), this machine has {:.1f} GiB available; a smaller batch, shorter sequences "
                            "(task.max_length, task.max_items) or a smaller model fit (`--set memory.check=false` "
                            "starts it anyway)",
                            memory_.bytes / kGiB, memory_.longest_frames, memory_.batch, memory_.available / kGiB));
  optimizer_ = make_optimizer(config_, model_->params());
  unroller_ = std::make_unique<Unroller>(*model_, tape_);
  // This rank's sequences of the batch (all of them when not distributed), and the threads they fill.
  const std::int64_t B = config_.integer("batch"), K = ranks_ ? ranks_->size() : 1, r = ranks_ ? ranks_->rank() : 0;
  if (B < K)
    throw Error(fmt::format("distributed: a batch of {} cannot be split over {} ranks (each needs a sequence)", B, K));
  const std::int64_t rank_batch = B * (r + 1) / K - B * r / K;
  const std::int64_t threads =
      std::min(config_.integer("threads"), std::max<std::int64_t>(1, rank_batch / kMinPart));
  for (std::int64_t k = 0; threads > 1 && k < threads; ++k) {
    auto part = std::make_unique<Part>();
    if (k == 0) {
      part->model = model_.get(), part->tape = &tape_, part->unroller = unroller_.get();
    } else {
      part->own_model = make_model(config_, *task_, DType::f32);
      // Each step copies the values by position: the copy must create the same parameters in the same order.
      const ParameterStore &ours = model_->params(), &theirs = part->own_model->params();
      if (theirs.size() != ours.size())
        throw Error(fmt::format("threads: model {} built a second time creates {} parameters, not {}", model_->name(),
                                theirs.size(), ours.size()));
      for (std::size_t i = 0; i < ours.size(); ++i)
        if (theirs[i].name != ours[i].name || theirs[i].value.shape() != ours[i].value.shape())
          throw Error(fmt::format("threads: model {} built a second time creates different parameters "
                                  "(parameter {})", model_->name(), ours[i].name));
      part->own_model->build();  // here, not in a step's BatchNormScope
      part->own_tape = std::make_unique<Tape>(DType::f32);
      part->own_unroller = std::make_unique<Unroller>(*part->own_model, *part->own_tape);
      part->model = part->own_model.get(), part->tape = part->own_tape.get(), part->unroller = part->own_unroller.get();
    }
    part->seed = Tensor(DType::f32, scalars(1));
    parts_.push_back(std::move(part));
  }
  if (threads > 1) team_ = std::make_unique<ThreadTeam>(int(threads));
  // Batch statistics (ops/batch_norm.hpp) over this rank's parts and the ranks.
  if (threads > 1 || ranks_) collective_ = std::make_unique<BatchCollective>(int(threads), ranks_);
  seed_ = Tensor(DType::f32, scalars(1));
  set_anomaly_mode(config_.flag("anomaly"));
  // What an update changes, and room to put it back when the update is not finite.
  for (auto& p : model_->params()) {
    updated_.push_back({"parameter " + p->name, &p->value});
    saved_.push_back(p->value);
  }
  for (auto& [name, t] : optimizer_->state_tensors()) {
    updated_.push_back({"optimiser state " + name, t});
    saved_.push_back(*t);
  }
  // What a step's forward changes (batch norm's running statistics), to undo a step that is not finite.
  for (auto& p : model_->params())
    if (p->buffer) buffers_.push_back({&p->value, p->value});
}

Trainer::~Trainer() = default;

namespace {
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  statm >> size >> resident;
  return resident * double(::sysconf(_SC_PAGESIZE));
}
}  // namespace

std::string MemoryEstimate::str() const {
  const std::string micro = micro_batch > 0 && micro_batch < batch
                                ? fmt::format(", in micro-batches of {} ({:.0f} KiB of state)", micro_batch,
                                              double(micro_batch) * state_bytes / 1024)
                                : "";
  return fmt::format("about {:.2f} GiB for the longest sequence ({} time steps × batch {}{}, {:.1f} KiB of tape per "
                     "time step and sequence); {:.1f} GiB available",
                     bytes / kGiB, longest_frames, batch, micro, tape_bytes_per_frame / 1024, available / kGiB);
}

MemoryEstimate Trainer::estimate_memory() {
  // Probes at the batch a pass runs (a micro-batch), or at most 64: a pass's bytes per sequence depend on its
  // batch (the memory's recomputation segment is chosen from the pass's memory size).
  const std::int64_t B = config_.integer("batch"), micro = config_.integer("micro_batch"),
                     b0 = std::min<std::int64_t>(B, micro > 0 ? micro : 64);
  Config probe_config = config_;
  probe_config.set_json("batch", b0, "memory estimate");
  const std::unique_ptr<Task> probe_task = make_task(probe_config);
  const std::string size_name = task_->size_name();
  const bool copy = size_name == "length";  // copy, delay: sized by task.*_length
  // retrieval: one size, task.pairs; probed at 1 and 3 pairs.
  const bool pairs = size_name == "pairs";
  // graph: one frame whatever the split; a data set (images): one size, one frame a sample. Probed twice.
  const bool split = size_name == "split", images = size_name == "images", one = split || images;
  // Else the task's own range of sizes (repeat_copy, priority_sort, ngrams), or the copy and recall keys.
  const auto [range_lo, range_hi] = task_->size_range();
  const bool ranged = !one && !pairs && range_hi > 0;
  const std::int64_t smallest = one || pairs ? 1
                                : ranged     ? range_lo
                                             : config_.integer(copy ? "task.min_length" : "task.min_items"),
                     largest = one      ? 1
                               : pairs  ? config_.integer("task.pairs")
                               : ranged ? range_hi
                                        : config_.integer(copy ? "task.max_length" : "task.max_items");
  Tape tape(DType::f32);
  // Both passes save what backward needs, as a run's first pass does: recomputing only ever holds less.
  tape.set_recompute_above(SIZE_MAX);
  Unroller unroller(*model_, tape);
  Rng rng(0);
  Sequence seq;
  double bytes[2], frames[2];
  // Bytes per sequence of the largest value an op records for each sequence (an NTM's memory); a value the
  // batch shares (of batch size 1: a vector model's stacked V, Step::projections) does not grow with a micro-batch.
  double state = 0;
  for (int k = 0; k < 2; ++k) {
    probe_task->sample_size_into(rng, smallest + (images ? 0 : 2 * k), seq, DType::f32);
    forward_backward(*model_, unroller, tape, seq);
    for (std::uint32_t id = 0; id < tape.size(); ++id)
      if (tape.node(id).op && tape.node(id).shape.batch == b0)
        state = std::max(state, double(size_of(tape.dtype()) * std::size_t(tape.node(id).shape.numel())) / double(b0));
    tape.clear();
    bytes[k] = double(tape.peak_pass_bytes()) / double(b0);
    frames[k] = double(seq.inputs.size());
  }
  model_->params().zero_grad();
  MemoryEstimate m;
  m.batch = B;
  m.tape_bytes_per_frame =
      frames[1] > frames[0] ? std::max(0.0, (bytes[1] - bytes[0]) / (frames[1] - frames[0])) : bytes[0] / frames[0];
  // A task whose sequences of one size differ in length says its longest; else it grows linearly with size.
  const double longest = task_->longest_steps() > 0
                             ? double(task_->longest_steps())
                             : frames[0] + double(largest - smallest) * (frames[1] - frames[0]) / 2;
  m.longest_frames = std::int64_t(longest);
  const double per_sequence = bytes[0] + (longest - frames[0]) * m.tape_bytes_per_frame;
  const double data = longest * 4.0 *
                      double(task_->input_rows() * task_->input_cols() + task_->output_rows() * task_->output_cols());
  const double copies = config_.integer("threads") > 1 ? 2 : 1;  // the threads' slices of the batch
  // Halved while a micro-batch's largest state exceeds micro_batch.state_kib.
  const double limit = 1024.0 * double(config_.integer("micro_batch.state_kib"));
  m.micro_batch = micro;
  while (limit > 0 && m.micro_batch > 1 && double(m.micro_batch) * state > limit) m.micro_batch /= 2;
  m.state_bytes = state;
  // The sequences whose tapes a pass holds at once: the batch, or each thread's micro-batch.
  const double held =
      micro > 0 ? double(std::min(B, std::max<std::int64_t>(1, config_.integer("threads")) * m.micro_batch))
                : double(B);
  m.tape_bytes = held * per_sequence;
  m.bytes = resident_bytes() + m.tape_bytes + double(B) * copies * data;
  m.available = available_memory();
  return m;
}

int Trainer::threads() const { return parts_.empty() ? 1 : int(parts_.size()); }

int Trainer::ranks() const { return ranks_ ? ranks_->size() : 1; }

void Trainer::set_anomaly_mode(bool on) {
  tape_.set_anomaly_mode(on);
  for (auto& p : parts_) p->tape->set_anomaly_mode(on);
}

double Trainer::step_flops() const { return flops_; }

// Part k of a batch of B sequences takes sequences [B k / n, B (k + 1) / n).
void Trainer::run_parallel(const Sequence& seq, std::int64_t total, StepStats& stats) {
  const std::int64_t B = seq.inputs[0].shape().batch, n = std::int64_t(parts_.size());
  ParameterStore& params = model_->params();
  for (std::int64_t k = 0; k < n; ++k) {
    Part& p = *parts_[std::size_t(k)];
    const std::int64_t first = B * k / n, count = B * (k + 1) / n - first;
    batch_slice(seq, first, count, p.slice);
    p.weight = double(count) / double(total);
    p.seed.fill(p.weight);
    if (k > 0)
      for (std::size_t i = 0; i < params.size(); ++i)
        std::memcpy(p.model->params()[i].value.raw(), params[i].value.raw(), params[i].value.bytes());
  }
  const std::int64_t micro = memory_.micro_batch;
  part_seconds_.resize(std::size_t(n));  // each thread writes its own part's
  // A part that fails aborts the batch-norm collective, so that the others, waiting for its sums, fail too
  // instead of waiting for ever; the error reported is the first (in part order) that was not that abort.
  team_->run([&](int k) {
    Part& p = *parts_[std::size_t(k)];
    p.error = nullptr;
    p.aborted = false;
    try {
      const auto start = std::chrono::steady_clock::now();
      BatchNormScope scope({BatchNormMode::batch, true, collective_.get(), k, p.slice.inputs[0].shape().batch});
      const PartResult r = part_gradients(*p.model, *p.unroller, *p.tape, p.slice, total, micro, p.chunk, p.seed);
      p.loss = r.loss;
      p.bits = r.bits;
      p.flops = r.flops;
      part_seconds_[std::size_t(k)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } catch (const BatchCollectiveAborted&) {
      p.error = std::current_exception();
      p.aborted = true;
    } catch (...) {
      p.error = std::current_exception();
      if (collective_) collective_->abort();
    }
  });
  std::exception_ptr error;
  for (const auto& p : parts_)
    if (p->error && (!error || !p->aborted)) {
      error = p->error;
      if (!p->aborted) break;
    }
  if (error) {
    if (collective_) collective_->reset();
    std::rethrow_exception(error);
  }
  // In part order, into part 0's (the model's) gradients.
  for (std::int64_t k = 0; k < n; ++k) {
    const Part& p = *parts_[std::size_t(k)];
    stats.loss += p.loss;
    stats.bits += p.bits;
    flops_ += p.flops;
    if (k == 0) continue;
    for (std::size_t i = 0; i < params.size(); ++i) {
      float* g = params[i].grad.view<float>().data;
      const float* h = p.model->params()[i].grad.view<float>().data;
      for (std::int64_t e = 0, m = params[i].grad.numel(); e < m; ++e) g[e] += h[e];
    }
  }
}

void Trainer::reduce_over_ranks(StepStats& stats) {
  const auto t0 = std::chrono::steady_clock::now();
  ParameterStore& params = model_->params();
  const std::size_t K = std::size_t(ranks_->size());
  if (gradients_.empty()) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < params.size(); ++i) n += std::size_t(params[i].grad.numel());
    gradients_.resize(n);
    gathered_.resize(n * K);
    sums_.resize(2);
    gathered_sums_.resize(2 * K);
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto g = params[i].grad.view<float>();
    std::memcpy(gradients_.data() + at, g.data, std::size_t(params[i].grad.numel()) * sizeof(float));
    at += std::size_t(params[i].grad.numel());
  }
  sums_ = {stats.loss, stats.bits};
  ranks_->allgather(gradients_.data(), gradients_.size(), gathered_.data());
  ranks_->allgather(sums_.data(), 2, gathered_sums_.data());
  // g = g_0 + g_1 + … in rank order, the additions of one process's parts (run_parallel).
  const std::size_t n = gradients_.size();
  float* g = gathered_.data();
  for (std::size_t r = 1; r < K; ++r) {
    const float* h = gathered_.data() + r * n;
    for (std::size_t e = 0; e < n; ++e) g[e] += h[e];
  }
  at = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::memcpy(params[i].grad.view<float>().data, g + at, std::size_t(params[i].grad.numel()) * sizeof(float));
    at += std::size_t(params[i].grad.numel());
  }
  stats.loss = stats.bits = 0;
  for (std::size_t r = 0; r < K; ++r) stats.loss += gathered_sums_[2 * r], stats.bits += gathered_sums_[2 * r + 1];
  reduce_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 1. (see the file): the smallest of the rules' bounds on the size, or the task's own draw.
void Trainer::sample_batch() {
  std::optional<std::int64_t> largest;
  for (const auto& r : rules_)
    if (const std::optional<std::int64_t> size = r->largest_size()) largest = largest ? std::min(*largest, *size) : *size;
  if (largest)
    task_->sample_size_into(data_rng_, data_rng_.uniform_int(task_->size_range().first, *largest), sequence_,
                            DType::f32);
  else
    task_->sample_step_into(step_, data_rng_, sequence_, DType::f32);
}

bool Trainer::stopped() const {
  for (const auto& r : rules_)
    if (r->stop()) return true;
  return false;
}

namespace {
// StepStats::xent_bits of a batch whose mean loss is `loss` and cost `cost`.
double cross_entropy_bits(const Sequence& seq, double loss, double cost) {
  if (seq.kind == TargetKind::probabilities) return cost;
  if (seq.kind != TargetKind::bits || !seq.lane_mask.empty()) return std::numeric_limits<double>::quiet_NaN();
  return loss * elements_per_sequence(seq) / std::log(2.0);
}
}  // namespace

StepStats Trainer::step() {
  sample_batch();
  const Sequence& seq = sequence_;
  ParameterStore& params = model_->params();
  StepStats stats;
  stats.frames = std::int64_t(seq.inputs.size());
  flops_ = 0;
  for (auto& [value, copy] : buffers_) std::memcpy(copy.raw(), value->raw(), copy.bytes());
  // A pass that throws (a part's error) leaves the parameters and buffers as they were before the step.
  try {
    if (ranks_) {
      const std::int64_t B = seq.inputs[0].shape().batch, K = ranks_->size(), r = ranks_->rank();
      const std::int64_t first = B * r / K, count = B * (r + 1) / K - first;
      batch_slice(seq, first, count, rank_part_);
      if (team_) {
        run_parallel(rank_part_, B, stats);
      } else {
        BatchNormScope scope({BatchNormMode::batch, true, collective_.get(), 0, count});
        const PartResult r = part_gradients(*model_, *unroller_, tape_, rank_part_, B,
                                            memory_.micro_batch, chunk_, seed_);
        stats.loss = r.loss;
        stats.bits = r.bits;
        flops_ = r.flops;
      }
      reduce_over_ranks(stats);
    } else if (team_) {
      run_parallel(seq, seq.inputs[0].shape().batch, stats);
    } else {
      BatchNormScope scope({BatchNormMode::batch, true, nullptr, 0, seq.inputs[0].shape().batch});
      const PartResult r = part_gradients(*model_, *unroller_, tape_, seq, seq.inputs[0].shape().batch,
                                          memory_.micro_batch, chunk_, seed_);
      stats.loss = r.loss;
      stats.bits = r.bits;
      flops_ = r.flops;
    }
  } catch (...) {
    params.zero_grad();
    for (auto& [value, copy] : buffers_) std::memcpy(value->raw(), copy.raw(), copy.bytes());
    throw;
  }
  stats.xent_bits = cross_entropy_bits(seq, stats.loss, stats.bits);
  if (config_.str("loss.reduction") == "sequence") scale_gradients(params, target_elements(seq));
  stats.grad_norm = gradient_norm(params);
  if (!std::isfinite(stats.loss) || !std::isfinite(stats.grad_norm)) {
    // Find the op: the same sequence again, whole, on part 0's tape, every op checked.
    std::string where = "no op produced a NaN/Inf under anomaly mode (the input data may hold one)";
    tape_.set_anomaly_mode(true);
    try {
      forward_backward(*model_, *unroller_, tape_, seq);
    } catch (const NumericError& e) {
      where = e.what();
    }
    tape_.set_anomaly_mode(config_.flag("anomaly"));
    params.zero_grad();
    for (auto& [value, copy] : buffers_) std::memcpy(value->raw(), copy.raw(), copy.bytes());
    return not_finite(stats, fmt::format("the {} is not finite; {}", std::isfinite(stats.loss) ? "gradient" : "loss",
                                         where));
  }
  // 2.: every rule sees the gradient; one that refuses it skips the update, the step counting as done.
  bool apply = true;
  for (const auto& r : rules_) apply = r->on_gradient(step_ + 1, stats) && apply;
  if (!apply) {
    params.zero_grad();
    for (auto& [value, copy] : buffers_) std::memcpy(value->raw(), copy.raw(), copy.bytes());
    ++step_;
    stats.skipped = true;
    evaluated_ = false;
    return stats;
  }
  if (const double c = config_.num("clip.value"); c > 0) clip_by_value(params, c);
  if (const double c = config_.num("clip.norm"); c > 0) clip_by_global_norm(params, c);
  for (std::size_t k = 0; k < updated_.size(); ++k)
    std::memcpy(saved_[k].raw(), updated_[k].second->raw(), saved_[k].bytes());
  const std::int64_t optimizer_steps = optimizer_->steps();
  double factor = 1.0;  // 3.: the rules' factors on lr.schedule's rate
  for (const auto& r : rules_) factor *= r->lr_factor();
  optimizer_->set_lr_scale(lr_scale(config_, step_, config_.integer("steps")) * factor);
  optimizer_->step();
  if (const std::string* bad = first_nonfinite(updated_)) {
    for (std::size_t k = 0; k < updated_.size(); ++k)
      std::memcpy(updated_[k].second->raw(), saved_[k].raw(), saved_[k].bytes());
    optimizer_->set_steps(optimizer_steps);
    params.zero_grad();
    for (auto& [value, copy] : buffers_) std::memcpy(value->raw(), copy.raw(), copy.bytes());
    return not_finite(stats, fmt::format("the {} update (lr = {}) made {} non-finite", optimizer_->name(),
                                         config_.num("lr") * optimizer_->lr_scale(), *bad));
  }
  ++step_;
  for (const auto& r : rules_) r->after_step(step_, stats);  // 4.
  evaluated_ = false;
  const std::int64_t interval = config_.integer("eval.interval");
  if (interval > 0 && step_ % interval == 0) {  // 5.
    validation_ = evaluate_held_out();
    const EvalReport report{step_, &validation_,
                            config_.str("eval.metric") == "loss" ? validation_.loss : validation_.error};
    for (const auto& r : rules_) r->after_evaluation(report, *model_);
    evaluated_ = true;
  }
  return stats;
}

std::int64_t step_budget(const Config& config, const Task& task) {
  const auto* data = dynamic_cast<const SplitTask*>(&task);
  if (data && config.integer("epochs") > 0) return config.integer("epochs") * data->steps_per_epoch();
  return config.integer("steps");
}

namespace {
// The mean loss and cost per example over batches, without gradients, batch norm on its running statistics:
// next(seq, count) gives the next batch (filling `seq` or another) and its examples, and nullptr after the last.
template <class Next>
SplitResult evaluate_batches(Model& model, Tape& tape, Next next) {
  SplitResult r;
  Unroller unroller(model, tape);
  NoGrad no_grad(tape);
  BatchNormScope eval({BatchNormMode::running});
  Sequence seq;  // outlives each run: the tape points into its frames
  std::int64_t count = 0;
  while (const Sequence* batch = next(seq, count)) {
    const SequenceResult& s = unroller.run(*batch);
    r.loss += s.loss.item() * double(count);
    r.error += s.bits * double(count);
    r.count += count;
  }
  if (r.count == 0) return r;
  r.loss /= double(r.count);
  r.error /= double(r.count);
  return r;
}
}  // namespace

SplitResult evaluate_split(Model& model, Tape& tape, const SplitTask& task, Split split, std::int64_t batch) {
  const std::int64_t n = task.split_size(split);
  std::int64_t first = 0;
  return evaluate_batches(model, tape, [&](Sequence& seq, std::int64_t& count) -> const Sequence* {
    if (first >= n) return nullptr;
    count = std::min(batch, n - first);
    task.split_batch_into(split, first, count, seq, model.dtype());
    first += count;
    return &seq;
  });
}

SplitResult Trainer::evaluate(Split split) {
  const SplitTask* data = split_task();
  if (!data) throw Error(fmt::format("evaluate: task {} has no {} part (only data sets do)", task_->name(), split_name(split)));
  return evaluate_split(*model_, tape_, *data, split, data->eval_batch(split, config_.integer("eval.batch")));
}

SplitResult Trainer::evaluate_held_out() {
  if (split_task()) return evaluate(Split::validation);
  std::size_t k = 0;
  return evaluate_batches(*model_, tape_, [&](Sequence&, std::int64_t& count) -> const Sequence* {
    count = task_->batch();
    return k < held_out_.size() ? &held_out_[k++] : nullptr;
  });
}

StepStats Trainer::not_finite(StepStats& stats, const std::string& what) {
  const std::int64_t max_skips = config_.integer("nonfinite.max_skips");
  if (config_.str("nonfinite") == "stop")
    throw TrainingError(fmt::format("step {}: {}; nothing was updated and no checkpoint was written "
                                    "(nonfinite = \"stop\"; `--set nonfinite=skip` skips such steps)",
                                    step_ + 1, what));
  if (++skipped_ > max_skips)
    throw TrainingError(fmt::format("step {}: {}; nothing was updated. {} steps were skipped for a NaN/Inf, more "
                                    "than nonfinite.max_skips = {}: stopping",
                                    step_ + 1, what, skipped_, max_skips));
  ++step_;
  stats.skipped = true;
  stats.nonfinite = what;
  return stats;
}

void Trainer::save(const std::string& dir) const {
  std::filesystem::create_directories(dir);
  const std::string path = (std::filesystem::path(dir) / "checkpoint.safetensors").string();
  if (const std::string* bad = first_nonfinite(updated_))
    throw TrainingError(fmt::format("checkpoint {}: not written: {} holds a NaN or Inf", path, *bad));
  TensorFile f;
  for (const auto& p : model_->params()) f.tensors.emplace("param/" + p->name, p->value);
  for (const auto& [name, t] : optimizer_->state_tensors()) f.tensors.emplace("optim/" + name, *t);
  const Rng::State& s = data_rng_.state();
  f.metadata = {{"format", "matmem-checkpoint-1"},
                {"step", std::to_string(step_)},
                {"optimizer", optimizer_->name()},
                {"optimizer_steps", std::to_string(optimizer_->steps())},
                {"rng", fmt::format("{} {} {} {}", s[0], s[1], s[2], s[3])},
                {"nonfinite_skips", std::to_string(skipped_)},
                {"config", config_.values().dump()}};
  // The rules' files first: a checkpoint never names a file that is not on disk.
  for (const auto& r : rules_) {
    r->save_files(dir, *model_, config_);
    if (std::optional<std::string> state = r->state()) f.metadata[r->name()] = std::move(*state);
  }
  write_safetensors(path, f);
}

namespace {
// A checkpoint's config in the keys of this version: task.graph.patience = p of earlier versions (the graph
// task's early stopping on the validation loss after every step) is eval.patience = p with eval.interval 1
// and eval.metric loss. Text that is not a JSON object is left for merge_json_text to refuse.
std::string upgraded_config(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("task.graph.patience")) return text;
  if (j.value("task", "") == "graph") {
    j["eval.patience"] = j["task.graph.patience"];
    j["eval.interval"] = 1;
    j["eval.metric"] = "loss";
  }
  j.erase("task.graph.patience");
  return j.dump();
}
}  // namespace

std::unique_ptr<Trainer> Trainer::resume(const std::string& dir, std::int64_t steps, std::int64_t threads,
                                         const Communicator* ranks, std::span<const std::string> sets) {
  const std::string path = (std::filesystem::path(dir) / "checkpoint.safetensors").string();
  TensorFile f = read_safetensors(path);
  auto meta = [&](const char* key) -> const std::string& {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end()) throw Error(fmt::format("checkpoint {}: metadata {} is missing", path, key));
    return it->second;
  };
  if (meta("format") != "matmem-checkpoint-1")
    throw Error(fmt::format("checkpoint {}: format {} (matmem-checkpoint-1 expected)", path, meta("format")));
  check_plugins_loaded(meta("config"), fmt::format("checkpoint {}", path));
  Config config;
  config.merge_json_text(upgraded_config(meta("config")), fmt::format("checkpoint {} (config)", path));
  if (steps > 0) {
    config.set_json("steps", steps, "--steps");
    config.set_json("epochs", 0, "--steps");  // the new total counts steps
  }
  if (threads > 0) config.set_json("threads", threads, "--threads");
  for (const std::string& set : sets) {
    const std::string key = set.substr(0, set.find('='));
    if (std::find(std::begin(kResumeKeys), std::end(kResumeKeys), key) == std::end(kResumeKeys))
      throw Error(fmt::format("--set {} with --resume: a resumed run may change only {}; {} would change the model, "
                              "the task or its data (start a new run instead)",
                              set, fmt::join(std::begin(kResumeKeys), std::end(kResumeKeys), ", "), key));
    config.assign(set, "--set");
  }
  auto t = std::make_unique<Trainer>(config, ranks);
  ParameterStore& params = t->model_->params();
  std::size_t used = 0;
  for (auto& p : params) {
    auto it = f.tensors.find("param/" + p->name);
    if (it == f.tensors.end())
      throw Error(fmt::format("checkpoint {}: parameter {} of model {} is missing", path, p->name, t->model_->name()));
    if (it->second.shape() != p->value.shape() || it->second.dtype() != p->value.dtype())
      throw Error(fmt::format("checkpoint {}: parameter {} is {} {} there, {} {} in the model", path, p->name,
                              it->second.shape().str(), name_of(it->second.dtype()), p->value.shape().str(),
                              name_of(p->value.dtype())));
    p->value = it->second;
    ++used;
  }
  for (auto& [name, tensor] : t->optimizer_->state_tensors()) {
    auto it = f.tensors.find("optim/" + name);
    if (it == f.tensors.end()) throw Error(fmt::format("checkpoint {}: optimiser state {} is missing", path, name));
    if (it->second.shape() != tensor->shape() || it->second.dtype() != tensor->dtype())
      throw Error(fmt::format("checkpoint {}: optimiser state {} is {} there, {} here", path, name,
                              it->second.shape().str(), tensor->shape().str()));
    *tensor = it->second;
    ++used;
  }
  if (used != f.tensors.size())
    throw Error(fmt::format("checkpoint {}: holds {} tensors, the model and optimiser use {} (a different model?)",
                            path, f.tensors.size(), used));
  Rng::State s;
  if (std::sscanf(meta("rng").c_str(), "%lu %lu %lu %lu", &s[0], &s[1], &s[2], &s[3]) != 4)
    throw Error(fmt::format("checkpoint {}: rng state \"{}\" is not four integers", path, meta("rng")));
  t->data_rng_.set_state(s);
  // A count in the metadata: a whole number ≥ 0, written in decimal.
  auto count = [&](const std::string& key, const std::string& text) {
    std::int64_t v = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0)
      throw Error(fmt::format("checkpoint {}: {} \"{}\" is not a whole number ≥ 0", path, key, text));
    return v;
  };
  t->step_ = count("step", meta("step"));
  if (auto it = f.metadata.find("nonfinite_skips"); it != f.metadata.end())
    t->skipped_ = count("nonfinite_skips", it->second);
  t->optimizer_->set_steps(count("optimizer_steps", meta("optimizer_steps")));
  // The rules' states, each under its name (a rule not in the checkpoint is told so), then their files.
  upgrade_rule_states(f.metadata);
  for (const auto& r : t->rules_) {
    const auto it = f.metadata.find(r->name());
    try {
      r->set_state(it == f.metadata.end() ? std::nullopt : std::optional<std::string>(it->second), t->step_);
    } catch (const Error& e) {
      throw Error(fmt::format("checkpoint {}: {}", path, e.what()));
    }
    r->load_files(dir, *t->model_);
  }
  return t;
}

}  // namespace matmem
