#include "matmem/models/training/trainer.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/models/training/clip.hpp"
#include "matmem/models/training/data_parallel.hpp"
#include "matmem/models/training/rules/registry.hpp"
#include "matmem/models/training/schedule.hpp"
#include "matmem/ops/batch_norm.hpp"
#include "matmem/runtime/float_env.hpp"

namespace matmem {

namespace {
// The data stream is its own Rng, derived from the seed, so it does not depend on how many parameters
// the model initialised.
Rng data_rng_for(std::int64_t seed) { return Rng(std::uint64_t(seed) ^ 0x5eed5eed5eed5eedULL); }

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

// StepStats::xent_bits of a batch whose mean loss is `loss` and cost `cost`.
double cross_entropy_bits(const Sequence& seq, double loss, double cost) {
  if (seq.kind == TargetKind::probabilities) return cost;
  if (seq.kind != TargetKind::bits || !seq.lane_mask.empty()) return std::numeric_limits<double>::quiet_NaN();
  return loss * elements_per_sequence(seq) / std::log(2.0);
}
}  // namespace

Trainer::Trainer(const Config& config, const Communicator* ranks) : Trainer(config, ranks, false) {}

Trainer::Trainer(const Config& config, const Communicator* ranks, bool from_checkpoint)
    : config_(config), tape_(training_dtype(config)), data_rng_(data_rng_for(config.integer("seed"))) {
  // make_task and make_model check every key's range (check_config) before they read any; a relation between a
  // model's keys and the training's is the model's factory's to check (models/registry.cpp).
  task_ = make_task(config_);
  config_.set_json("steps", step_budget(config_, *task_), "epochs");
  model_ = make_model(config_, *task_, tape_.dtype());
  if (!from_checkpoint && !config_.str("init").empty()) start_from(config_.str("init"));
  rules_ = make_rules(config_, *task_);
  // A generated task's held-out batches (5. in the file): drawn once, from their own Rng, at the task's sizes.
  if (!split_task() && config_.integer("eval.interval") > 0) {
    Rng held_out(std::uint64_t(config_.integer("eval.seed")));
    held_out_.resize(std::size_t(config_.integer("eval.batches")));
    for (Sequence& seq : held_out_) task_->sample_into(held_out, seq, tape_.dtype());
  }
  if (config_.str("loss.reduction") == "sequence") {  // refused now rather than at the first step
    Rng probe(0);  // not the data stream, which stays the run's
    Sequence seq;
    task_->sample_into(probe, seq, tape_.dtype());
    target_elements(seq);
  }
  memory_ = estimate_memory(config_, *model_, *task_);
  if (config_.flag("memory.check") && memory_.bytes > memory_.available)
    throw Error(fmt::format("memory: this run needs about {:.1f} GiB at its longest sequence ({} time steps × batch "
                            "{}), this machine has {:.1f} GiB available; a smaller batch, shorter sequences "
                            "(task.max_length, task.max_items) or a smaller model fit (`--set memory.check=false` "
                            "starts it anyway)",
                            memory_.bytes / double(1 << 30), memory_.longest_frames, memory_.batch,
                            memory_.available / double(1 << 30)));
  // A run that stops at a non-finite update needs no second buffers to take an update whole or not at all
  // (models/training/optimizer.hpp): it updates in place, the same values in fewer bytes moved; one that skips
  // such updates keeps them.
  optimizer_ = make_optimizer(config_, model_->params(),
                              config_.str("nonfinite") == "stop" ? UpdateMode::in_place : UpdateMode::whole);
  unroller_ = std::make_unique<Unroller>(*model_, tape_);
  parallel_ = std::make_unique<DataParallel>(config_, *task_, *model_, tape_, *unroller_, config_.integer("threads"),
                                             config_.integer("batch"), ranks);
  set_anomaly_mode(config_.flag("anomaly"));
  // What a step's forward changes (batch norm's running statistics), to undo a step that is not finite.
  for (auto& p : model_->params())
    if (p->buffer) buffers_.push_back({&p->value, p->value});
  for (const auto& r : rules_) r->begin(0);
}

Trainer::~Trainer() = default;

int Trainer::threads() const { return parallel_->threads(); }
int Trainer::ranks() const { return parallel_->ranks(); }
double Trainer::reduce_seconds() const { return parallel_->reduce_seconds(); }
const std::vector<double>& Trainer::part_seconds() const { return parallel_->part_seconds(); }

void Trainer::set_anomaly_mode(bool on) {
  tape_.set_anomaly_mode(on);
  parallel_->set_anomaly_mode(on);
}

double Trainer::step_flops() const { return flops_; }

void Trainer::discard_step() {
  model_->params().zero_grad();
  for (auto& [value, copy] : buffers_) std::memcpy(value->raw(), copy.raw(), copy.bytes());
}

// 1. (see the file): the smallest of the rules' bounds on the size, or the task's own draw.
void Trainer::sample_batch() {
  std::optional<std::int64_t> largest;
  for (const auto& r : rules_)
    if (const std::optional<std::int64_t> size = r->largest_size()) largest = largest ? std::min(*largest, *size) : *size;
  if (largest)
    task_->sample_size_into(data_rng_, data_rng_.uniform_int(task_->size_range().first, *largest), sequence_,
                            tape_.dtype());
  else
    task_->sample_step_into(step_, data_rng_, sequence_, tape_.dtype());
}

std::vector<std::string> Trainer::take_messages() {
  std::vector<std::string> lines;
  for (const auto& r : rules_)
    for (std::string& line : r->take_messages()) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::pair<std::string, double>> Trainer::figures() const {
  std::vector<std::pair<std::string, double>> all;
  for (const auto& r : rules_)
    for (auto& f : r->figures()) all.push_back(std::move(f));
  return all;
}

double Trainer::figure(std::string_view name, double otherwise) const {
  for (const auto& [key, value] : figures())
    if (key == name) return value;
  return otherwise;
}

std::int64_t Trainer::skipped_updates() const {
  std::int64_t n = skipped_;
  for (const auto& r : rules_) n += r->skipped_updates();
  return n;
}

std::string Trainer::summary() const {
  std::string text;
  for (const auto& r : rules_)
    if (std::string s = r->summary(); !s.empty()) text += (text.empty() ? "" : "; ") + s;
  return text;
}

bool Trainer::stopped() const {
  for (const auto& r : rules_)
    if (r->stop()) return true;
  return false;
}

StepStats Trainer::step() {
  const FlushDenormals flush(config_.flag("flush_denormals"));  // and in each part's thread (DataParallel)
  sample_batch();
  const Sequence& seq = sequence_;
  ParameterStore& params = model_->params();
  StepStats stats;
  stats.frames = std::int64_t(seq.inputs.size());
  flops_ = 0;
  for (auto& [value, copy] : buffers_) std::memcpy(copy.raw(), value->raw(), copy.bytes());
  // A pass that throws (a part's error) leaves the parameters and buffers as they were before the step.
  try {
    const BatchPass pass = parallel_->gradients(seq, memory_.micro_batch);
    stats.loss = pass.loss;
    stats.bits = pass.bits;
    flops_ = pass.flops;
  } catch (...) {
    discard_step();
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
      params.zero_grad();
      tape_.backward(unroller_->run(seq).loss);
    } catch (const NumericError& e) {
      where = e.what();
    }
    tape_.set_anomaly_mode(config_.flag("anomaly"));
    discard_step();
    return not_finite(stats, fmt::format("the {} is not finite; {}", std::isfinite(stats.loss) ? "gradient" : "loss",
                                         where));
  }
  // 2.: every rule sees the gradient; one that refuses it skips the update, the step counting as done.
  bool apply = true;
  for (const auto& r : rules_) apply = r->on_gradient(step_ + 1, stats) && apply;
  if (!apply) {
    discard_step();
    ++step_;
    stats.skipped = true;
    evaluated_ = false;
    return stats;
  }
  if (const double c = config_.num("clip.value"); c > 0) clip_by_value(params, c);
  if (const double c = config_.num("clip.norm"); c > 0) clip_by_global_norm(params, c);
  double factor = 1.0;  // 3.: the rules' factors on lr.schedule's rate
  for (const auto& r : rules_) factor *= r->lr_factor();
  optimizer_->set_lr_scale(lr_scale(config_, step_, config_.integer("steps")) * factor);
  if (const std::optional<std::string> bad = optimizer_->step()) {  // whole or not at all, or in place (stop)
    discard_step();
    return not_finite(stats, fmt::format("the {} update (lr = {}) made {} non-finite", optimizer_->name(),
                                         config_.num("lr") * optimizer_->lr_scale(), *bad),
                      optimizer_->mode() == UpdateMode::in_place);
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

SplitResult Trainer::evaluate(Split split) {
  const FlushDenormals flush(config_.flag("flush_denormals"));
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

StepStats Trainer::not_finite(StepStats& stats, const std::string& what, bool updated) {
  const std::int64_t max_skips = config_.integer("nonfinite.max_skips");
  if (config_.str("nonfinite") == "stop")
    throw TrainingError(fmt::format("step {}: {}; {} and no checkpoint was written "
                                    "(nonfinite = \"stop\"; `--set nonfinite=skip` skips such steps)",
                                    step_ + 1, what,
                                    updated ? "the update was taken in place, so the model holds it in part,"
                                            : "nothing was updated"));
  if (++skipped_ > max_skips)
    throw TrainingError(fmt::format("step {}: {}; nothing was updated. {} steps were skipped for a NaN/Inf, more "
                                    "than nonfinite.max_skips = {}: stopping",
                                    step_ + 1, what, skipped_, max_skips));
  ++step_;
  stats.skipped = true;
  stats.nonfinite = what;
  return stats;
}

}  // namespace matmem
