/// @file
/// DataParallel: the gradient of a batch's mean loss, split over this process's threads and the ranks of a
/// distributed run, one path whatever their numbers (the Trainer's step calls it; trainer.hpp describes the
/// split, its order of additions and why it is reproducible bit for bit).
///
///   rank r of K takes sequences ⌊B·r/K⌋ … ⌊B·(r+1)/K⌋ of the batch of B (K = 1: all of them);
///   part k of its n parts takes its share of those; part 0 runs the trainer's model on its tape, every other
///   part a copy of the model (the parameter values copied in first) on a tape of its own, in its own thread;
///   part k's micro-batches are backpropagated with their share of B, so the parts' gradients, added into the
///   model's in part order, and then the ranks' in rank order, are the gradient of the whole batch's mean loss.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "matmem/autodiff/tape.hpp"
#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

class BatchCollective;
class Communicator;
class Config;
class ThreadTeam;

/// What a batch's gradient pass measured.
struct BatchPass {
  double loss = 0, bits = 0;  ///< the batch's mean loss and cost per sequence (every rank's)
  double flops = 0;           ///< recorded by this process's tapes, forward and backward, over every micro-batch
};

/// The gradient of a batch's mean loss over threads and ranks (see the file).
class DataParallel {
 public:
  /// Over `model` (part 0, run on `tape` by `unroller`) and, with `threads` > 1, copies of it made from
  /// `config` and `task`; `ranks`: a distributed run's (nullptr: this process alone). `batch`: the sequences of
  /// a whole batch; the parts are min(threads, ⌊rank's sequences / Trainer::kMinPart⌋).
  DataParallel(const Config& config, const Task& task, Model& model, Tape& tape, Unroller& unroller,
               std::int64_t threads, std::int64_t batch, const Communicator* ranks);
  ~DataParallel();

  /// The gradient of `batch`'s mean loss in the model's gradients (zeroed first), each part in micro-batches
  /// of `micro` sequences (0: whole). Throws the first part's error (its batch-norm collective reset).
  BatchPass gradients(const Sequence& batch, std::int64_t micro);

  int threads() const { return int(parts_.size()); }  ///< the parts a pass runs in (in this rank)
  int ranks() const;                                  ///< 1 when not distributed
  /// With threads > 1, the seconds each part of the last pass took on its thread; else empty.
  const std::vector<double>& part_seconds() const { return part_seconds_; }
  double reduce_seconds() const { return reduce_seconds_; }  ///< the last pass's gather over the ranks
  void set_anomaly_mode(bool on);  ///< on every part's tape

 private:
  struct Part;
  Model& model_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::unique_ptr<ThreadTeam> team_;             // threads > 1
  std::unique_ptr<BatchCollective> collective_;  // threads > 1 or distributed: batch norm's sums over the parts
  const Communicator* ranks_ = nullptr;
  bool flush_denormals_ = true;  // config flush_denormals: each part's thread flushes subnormals to zero
  Sequence rank_part_;  // distributed: this rank's sequences of the batch
  std::vector<float> gradients_, gathered_;
  std::vector<double> sums_, gathered_sums_;
  std::vector<double> part_seconds_;
  double reduce_seconds_ = 0;

  void run_parts(const Sequence& seq, std::int64_t total, std::int64_t micro, BatchPass& pass);
  void reduce_over_ranks(BatchPass& pass);
};

}  // namespace matmem
