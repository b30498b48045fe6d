#include "matmem/models/training/data_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "matmem/models/registry.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/ops/batch_norm.hpp"
#include "matmem/runtime/communicator.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/float_env.hpp"
#include "matmem/runtime/thread_team.hpp"

namespace matmem {

namespace {
// The gradients of `seq`, a part of a batch of `total` sequences, in the model's (zeroed first), as those of
// the whole batch's mean loss: in micro-batches of `micro` sequences and a last one of the rest (0: all at
// once; whole micro-batches fill the memory ops' SIMD lanes), run one after another on `tape`, each
// backpropagated with its share count / total, so that their gradients add up in the model's. `chunk` and
// `seed` are kept by the caller.
BatchPass part_gradients(Model& model, Unroller& unroller, Tape& tape, const Sequence& seq, std::int64_t total,
                         std::int64_t micro, Sequence& chunk, Tensor& seed) {
  model.params().zero_grad();
  const std::int64_t B = seq.inputs[0].shape().batch;
  const std::int64_t m = micro > 0 && micro < B ? micro : B, n = (B + m - 1) / m;
  BatchPass out;
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
// own copy of the model (parameter values copied in before each pass), tape and unroller.
struct DataParallel::Part {
  Model* model = nullptr;
  Tape* tape = nullptr;
  Unroller* unroller = nullptr;
  std::unique_ptr<Model> own_model;
  std::unique_ptr<Tape> own_tape;
  std::unique_ptr<Unroller> own_unroller;
  Sequence slice;  // the part's sequences of the batch (more than one part)
  Sequence chunk;  // a micro-batch of them
  Tensor seed;     // [1] holding a micro-batch's share of the batch, the loss's backward seed
  BatchPass pass;
  std::exception_ptr error;  // the exception the part's pass left with, if any
  bool aborted = false;      // that exception is the collective's abort (another part failed first)
};

DataParallel::DataParallel(const Config& config, const Task& task, Model& model, Tape& tape, Unroller& unroller,
                           std::int64_t threads_asked, std::int64_t B, const Communicator* ranks)
    : model_(model), ranks_(ranks && ranks->size() > 1 ? ranks : nullptr),
      flush_denormals_(config.flag("flush_denormals")) {
  const std::int64_t K = ranks_ ? ranks_->size() : 1, r = ranks_ ? ranks_->rank() : 0;
  if (ranks_ && model.dtype() != DType::f32)
    throw Error("distributed: the ranks exchange float32 gradients; a float64 run (dtype) trains in one process");
  if (B < K)
    throw Error(fmt::format("distributed: a batch of {} cannot be split over {} ranks (each needs a sequence)", B, K));
  const std::int64_t rank_batch = B * (r + 1) / K - B * r / K;
  const std::int64_t threads = std::min(threads_asked, std::max<std::int64_t>(1, rank_batch / Trainer::kMinPart));
  for (std::int64_t k = 0; k < threads; ++k) {
    auto part = std::make_unique<Part>();
    if (k == 0) {
      part->model = &model, part->tape = &tape, part->unroller = &unroller;
    } else {
      part->own_model = make_model(config, task, model.dtype());
      // Each pass copies the values by position: the copy must create the same parameters in the same order.
      const ParameterStore &ours = model.params(), &theirs = part->own_model->params();
      if (theirs.size() != ours.size())
        throw Error(fmt::format("threads: model {} built a second time creates {} parameters, not {}", model.name(),
                                theirs.size(), ours.size()));
      for (std::size_t i = 0; i < ours.size(); ++i)
        if (theirs[i].name != ours[i].name || theirs[i].value.shape() != ours[i].value.shape())
          throw Error(fmt::format("threads: model {} built a second time creates different parameters "
                                  "(parameter {})", model.name(), ours[i].name));
      part->own_model->build();  // here, not in a pass's BatchNormScope
      part->own_tape = std::make_unique<Tape>(model.dtype());
      part->own_unroller = std::make_unique<Unroller>(*part->own_model, *part->own_tape);
      part->model = part->own_model.get(), part->tape = part->own_tape.get(), part->unroller = part->own_unroller.get();
    }
    part->seed = Tensor(model.dtype(), scalars(1));
    parts_.push_back(std::move(part));
  }
  if (threads > 1) team_ = std::make_unique<ThreadTeam>(int(threads));
  // Batch statistics (ops/batch_norm.hpp) over this rank's parts and the ranks.
  if (threads > 1 || ranks_) collective_ = std::make_unique<BatchCollective>(int(threads), ranks_);
}

DataParallel::~DataParallel() = default;

int DataParallel::ranks() const { return ranks_ ? ranks_->size() : 1; }

void DataParallel::set_anomaly_mode(bool on) {
  for (auto& p : parts_) p->tape->set_anomaly_mode(on);
}

BatchPass DataParallel::gradients(const Sequence& batch, std::int64_t micro) {
  const std::int64_t B = batch.inputs[0].shape().batch;
  BatchPass pass;
  if (!ranks_) {
    run_parts(batch, B, micro, pass);
    return pass;
  }
  const std::int64_t K = ranks_->size(), r = ranks_->rank();
  const std::int64_t first = B * r / K, count = B * (r + 1) / K - first;
  batch_slice(batch, first, count, rank_part_);
  run_parts(rank_part_, B, micro, pass);
  reduce_over_ranks(pass);
  return pass;
}

// Part k of the n parts of `seq` (of a batch of `total`) takes its sequences [S k / n, S (k + 1) / n); one part
// runs in the caller's thread on `seq` itself.
void DataParallel::run_parts(const Sequence& seq, std::int64_t total, std::int64_t micro, BatchPass& pass) {
  const std::int64_t S = seq.inputs[0].shape().batch, n = std::int64_t(parts_.size());
  ParameterStore& params = model_.params();
  auto run = [&](Part& p, int k, const Sequence& part) {
    const FlushDenormals flush(flush_denormals_);  // each part's thread as the trainer's (Trainer::step)
    BatchNormScope scope({BatchNormMode::batch, true, collective_.get(), k, part.inputs[0].shape().batch});
    p.pass = part_gradients(*p.model, *p.unroller, *p.tape, part, total, micro, p.chunk, p.seed);
  };
  if (n == 1) {
    run(*parts_[0], 0, seq);
  } else {
    for (std::int64_t k = 0; k < n; ++k) {
      Part& p = *parts_[std::size_t(k)];
      const std::int64_t first = S * k / n, count = S * (k + 1) / n - first;
      batch_slice(seq, first, count, p.slice);
      if (k > 0)
        for (std::size_t i = 0; i < params.size(); ++i)
          std::memcpy(p.model->params()[i].value.raw(), params[i].value.raw(), params[i].value.bytes());
    }
    part_seconds_.resize(std::size_t(n));  // each thread writes its own part's
    // A part that fails aborts the batch-norm collective, so that the others, waiting for its sums, fail too
    // instead of waiting for ever; the error reported is the first (in part order) that was not that abort.
    team_->run([&](int k) {
      Part& p = *parts_[std::size_t(k)];
      p.error = nullptr;
      p.aborted = false;
      try {
        const auto start = std::chrono::steady_clock::now();
        run(p, k, p.slice);
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
  }
  // In part order, into part 0's (the model's) gradients.
  for (std::int64_t k = 0; k < n; ++k) {
    const Part& p = *parts_[std::size_t(k)];
    pass.loss += p.pass.loss;
    pass.bits += p.pass.bits;
    pass.flops += p.pass.flops;
    if (k == 0) continue;
    for (std::size_t i = 0; i < params.size(); ++i)
      dispatch(params[i].grad.dtype(), [&](auto z) {
        using T = decltype(z);
        T* g = params[i].grad.view<T>().data;
        const T* h = p.model->params()[i].grad.view<T>().data;
        for (std::int64_t e = 0, m = params[i].grad.numel(); e < m; ++e) g[e] += h[e];
      });
  }
}

void DataParallel::reduce_over_ranks(BatchPass& pass) {
  const auto t0 = std::chrono::steady_clock::now();
  ParameterStore& params = model_.params();
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
  sums_ = {pass.loss, pass.bits};
  ranks_->allgather(gradients_.data(), gradients_.size(), gathered_.data());
  ranks_->allgather(sums_.data(), 2, gathered_sums_.data());
  // g = g_0 + g_1 + … in rank order, the additions of one process's parts (run_parts).
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
  pass.loss = pass.bits = 0;
  for (std::size_t r = 0; r < K; ++r) pass.loss += gathered_sums_[2 * r], pass.bits += gathered_sums_[2 * r + 1];
  reduce_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace matmem
