#include "models/training/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/training/adam.hpp"
#include "models/training/sgd.hpp"
#include "runtime/safetensors.hpp"
#include "models/training/clip.hpp"
#include "models/training/rmsprop.hpp"
#include "runtime/error.hpp"
#include "runtime/thread_team.hpp"

namespace matmem {

std::unique_ptr<Optimizer> make_optimizer(const Config& c, ParameterStore& params) {
  const std::string name = c.str("optimizer");
  const double lr = c.num("lr"), wd = c.num("weight_decay");
  if (!(lr > 0)) throw Error(fmt::format("config: lr = {} must be > 0", lr));
  if (name == "rmsprop")
    return std::make_unique<RMSprop>(params, RMSpropOptions{lr, c.num("rmsprop.alpha"), c.num("rmsprop.momentum"),
                                                            c.num("rmsprop.eps"), wd, c.flag("rmsprop.centered")});
  if (name == "adam")
    return std::make_unique<Adam>(params, AdamOptions{lr, c.num("adam.beta1"), c.num("adam.beta2"), c.num("adam.eps"), wd});
  if (name == "sgd") return std::make_unique<SGD>(params, SGDOptions{lr, c.num("sgd.momentum"), wd});
  throw Error(fmt::format("config: unknown optimizer {} (rmsprop, adam or sgd)", name));
}

namespace {
void validate(const Config& c) {
  auto positive = [&](const char* key) {
    if (c.integer(key) < 1) throw Error(fmt::format("config: {} = {} must be ≥ 1", key, c.integer(key)));
  };
  positive("steps");
  positive("batch");
  positive("log_every");
  positive("threads");
  if (c.integer("seed") < 0) throw Error(fmt::format("config: seed = {} must be ≥ 0", c.integer("seed")));
  if (c.integer("checkpoint_every") < 0) throw Error("config: checkpoint_every must be ≥ 0");
  if (c.num("clip.value") < 0 || c.num("clip.norm") < 0) throw Error("config: clip.value and clip.norm must be ≥ 0");
}
// The data stream is its own Rng, derived from the seed, so it does not depend on how many parameters
// the model initialised.
Rng data_rng_for(std::int64_t seed) { return Rng(std::uint64_t(seed) ^ 0x5eed5eed5eed5eedULL); }

// The model's gradients of `seq`'s mean loss: zeroed, the sequence unrolled on `tape`, the loss
// backpropagated with `seed` (nullptr: 1).
const SequenceResult& forward_backward(Model& model, Unroller& unroller, Tape& tape, const Sequence& seq,
                                       const Tensor* seed) {
  model.params().zero_grad();
  const SequenceResult& r = unroller.run(seq);
  if (seed) tape.backward(r.loss, *seed);
  else tape.backward(r.loss);
  return r;
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
  Tensor seed;     // [1] holding B_k / B, the loss's backward seed
  double weight = 0, loss = 0, bits = 0;
};

Trainer::Trainer(const Config& config)
    : config_(config), tape_(DType::f32), data_rng_(data_rng_for(config.integer("seed"))) {
  validate(config_);
  task_ = make_task(config_);
  model_ = make_model(config_, *task_, DType::f32);
  optimizer_ = make_optimizer(config_, model_->params());
  unroller_ = std::make_unique<Unroller>(*model_, tape_);
  const std::int64_t threads =
      std::min(config_.integer("threads"), std::max<std::int64_t>(1, config_.integer("batch") / kMinPart));
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
      part->own_tape = std::make_unique<Tape>(DType::f32);
      part->own_unroller = std::make_unique<Unroller>(*part->own_model, *part->own_tape);
      part->model = part->own_model.get(), part->tape = part->own_tape.get(), part->unroller = part->own_unroller.get();
    }
    part->seed = Tensor(DType::f32, scalars(1));
    parts_.push_back(std::move(part));
  }
  if (threads > 1) team_ = std::make_unique<ThreadTeam>(int(threads));
  set_anomaly_mode(config_.flag("anomaly"));
}

Trainer::~Trainer() = default;

int Trainer::threads() const { return parts_.empty() ? 1 : int(parts_.size()); }

void Trainer::set_anomaly_mode(bool on) {
  tape_.set_anomaly_mode(on);
  for (auto& p : parts_) p->tape->set_anomaly_mode(on);
}

double Trainer::step_flops() const {
  if (parts_.empty()) return tape_.flops().total();
  double f = 0;
  for (const auto& p : parts_) f += p->tape->flops().total();  // part 0's tape is tape_
  return f;
}

// Part k of a batch of B sequences takes sequences [B k / n, B (k + 1) / n).
void Trainer::run_parallel(StepStats& stats) {
  const std::int64_t B = sequence_.inputs[0].shape().batch, n = std::int64_t(parts_.size());
  ParameterStore& params = model_->params();
  for (std::int64_t k = 0; k < n; ++k) {
    Part& p = *parts_[std::size_t(k)];
    const std::int64_t first = B * k / n, count = B * (k + 1) / n - first;
    batch_slice(sequence_, first, count, p.slice);
    p.weight = double(count) / double(B);
    p.seed.fill(p.weight);
    if (k > 0)
      for (std::size_t i = 0; i < params.size(); ++i)
        std::memcpy(p.model->params()[i].value.raw(), params[i].value.raw(), params[i].value.bytes());
  }
  team_->run([&](int k) {
    Part& p = *parts_[std::size_t(k)];
    const SequenceResult& r = forward_backward(*p.model, *p.unroller, *p.tape, p.slice, &p.seed);
    p.loss = p.weight * r.loss.item();
    p.bits = p.weight * r.bits;
  });
  // In part order, into part 0's (the model's) gradients.
  for (std::int64_t k = 0; k < n; ++k) {
    const Part& p = *parts_[std::size_t(k)];
    stats.loss += p.loss;
    stats.bits += p.bits;
    if (k == 0) continue;
    for (std::size_t i = 0; i < params.size(); ++i) {
      float* g = params[i].grad.view<float>().data;
      const float* h = p.model->params()[i].grad.view<float>().data;
      for (std::int64_t e = 0, m = params[i].grad.numel(); e < m; ++e) g[e] += h[e];
    }
  }
}

StepStats Trainer::step() {
  task_->sample_into(data_rng_, sequence_, DType::f32);
  const Sequence& seq = sequence_;
  ParameterStore& params = model_->params();
  StepStats stats;
  stats.frames = std::int64_t(seq.inputs.size());
  if (team_) {
    run_parallel(stats);
  } else {
    const SequenceResult& r = forward_backward(*model_, *unroller_, tape_, seq, nullptr);
    stats.loss = r.loss.item();
    stats.bits = r.bits;
  }
  stats.grad_norm = gradient_norm(params);
  if (!std::isfinite(stats.loss) || !std::isfinite(stats.grad_norm)) {
    // Find the op: the same sequence again, whole, on part 0's tape, every op checked.
    std::string where = "no op produced a NaN/Inf under anomaly mode (the input data may hold one)";
    tape_.set_anomaly_mode(true);
    try {
      forward_backward(*model_, *unroller_, tape_, seq, nullptr);
    } catch (const NumericError& e) {
      where = e.what();
    }
    tape_.set_anomaly_mode(config_.flag("anomaly"));
    params.zero_grad();
    throw TrainingError(fmt::format("step {}: the {} is not finite; nothing was updated. {}", step_ + 1,
                                    std::isfinite(stats.loss) ? "gradient" : "loss", where));
  }
  if (const double c = config_.num("clip.value"); c > 0) clip_by_value(params, c);
  if (const double c = config_.num("clip.norm"); c > 0) clip_by_global_norm(params, c);
  optimizer_->step();
  ++step_;
  return stats;
}

void Trainer::save(const std::string& dir) const {
  std::filesystem::create_directories(dir);
  TensorFile f;
  for (const auto& p : model_->params()) f.tensors.emplace("param/" + p->name, p->value);
  for (const auto& [name, t] : optimizer_->state_tensors()) f.tensors.emplace("optim/" + name, *t);
  const Rng::State& s = data_rng_.state();
  f.metadata = {{"format", "matmem-checkpoint-1"},
                {"step", std::to_string(step_)},
                {"optimizer", optimizer_->name()},
                {"optimizer_steps", std::to_string(optimizer_->steps())},
                {"rng", fmt::format("{} {} {} {}", s[0], s[1], s[2], s[3])},
                {"config", config_.values().dump()}};
  write_safetensors((std::filesystem::path(dir) / "checkpoint.safetensors").string(), f);
}

std::unique_ptr<Trainer> Trainer::resume(const std::string& dir, std::int64_t steps, std::int64_t threads) {
  const std::string path = (std::filesystem::path(dir) / "checkpoint.safetensors").string();
  TensorFile f = read_safetensors(path);
  auto meta = [&](const char* key) -> const std::string& {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end()) throw Error(fmt::format("checkpoint {}: metadata {} is missing", path, key));
    return it->second;
  };
  if (meta("format") != "matmem-checkpoint-1")
    throw Error(fmt::format("checkpoint {}: format {} (matmem-checkpoint-1 expected)", path, meta("format")));
  Config config;
  config.merge_json_text(meta("config"), fmt::format("checkpoint {} (config)", path));
  if (steps > 0) config.set_json("steps", steps, "--steps");
  if (threads > 0) config.set_json("threads", threads, "--threads");
  auto t = std::make_unique<Trainer>(config);
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
  t->step_ = std::stoll(meta("step"));
  t->optimizer_->set_steps(std::stoll(meta("optimizer_steps")));
  return t;
}

}  // namespace matmem
