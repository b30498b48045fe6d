// The user's own sequences, read from files (`matmem train --task data --set task.data=DIR`): any model trains,
// is evaluated and stops early on them as on Fashion-MNIST (models/data/fashion_mnist.hpp).
//
// Files: one per part, DIR/train.safetensors, DIR/validation.safetensors, DIR/test.safetensors; or one
// directory per part, DIR/train/, DIR/validation/, DIR/test/, each holding inputs.npy, targets.npy and
// mask.npy. The train part is needed; a missing validation or test part is empty. Each part holds
//   inputs  [N, T, r, c]   float32 or float64: frame t of sequence n is the r×c matrix inputs[n, t]
//                          ([N, T, c]: r = 1, vector frames)
//   targets [N, T, r', c'] float32 or float64, for task.loss = bce (targets in [0, 1]) or mse
//                          ([N, T, c']: r' = 1);
//           [N, T] or [N, T, r'] of integers (int8..int64, uint8..uint64) for task.loss = softmax_ce: the
//                          class 0..C−1 of each of the r' output rows, a one-hot row of C columns
//                          (C = task.classes, or the largest class at a counted step + 1 when it is 0)
//   mask    [N, T]         any number type: nonzero where the step's target counts (padding, a sequence
//                          shorter than T, or "only the last step" are masks). A part without a mask counts
//                          every step. A class at an uncounted step may be anything (−1, say).
// safetensors: the tensors are named inputs, targets, mask. .npy: little-endian, C order (version 1–3).
// Every part has the frame sizes of train; every sequence has at least one counted step.
// Refused, with the file, the tensor and its shape named: a missing file or tensor, a wrong rank or dtype, N or
// T that differ between inputs, targets and mask, a Fortran-order or big-endian .npy, a truncated file, a
// class outside 0..C−1, a file larger than the memory available (MemAvailable, or the cgroup's limit); and,
// with the element's index too, a NaN or an infinity anywhere in inputs, targets or mask, or a float64 beyond
// float32's range. Values are kept as float32 in memory.
//
// Sequences: a batch runs the time steps up to the last one any of its sequences counts; its target steps
// are the steps that some sequence of the batch counts, and a sequence that does not count one of them has a
// zero lane mask there (Sequence::lane_mask): the loss is each sequence's mean over its counted steps,
// averaged over the batch, and the cost counts the counted steps only (models/core/model.hpp).
// Loss by task.loss: bce → TargetKind::bits, mse → reals, softmax_ce → classes.
//
// Epochs as Fashion-MNIST's: training step k takes the sequences at positions (k mod E)·B … of epoch ⌊k / E⌋'s
// order of the train part, E = ⌊N_train / B⌋, each epoch's order a shuffle seeded by the run's seed and the
// epoch: a step's batch depends only on (seed, k).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

struct UserDataOptions {
  std::string data;          // the directory of the parts
  std::string loss = "bce";  // bce, mse or softmax_ce
  std::int64_t classes = 0;  // softmax_ce: C (0: from the data)
  std::int64_t batch = 16;
  std::uint64_t seed = 1;    // the run's: the epochs' orders
};

// One part as read: N sequences of T steps, C order.
struct UserSplit {
  std::string source;  // the file or directory it was read from ("" for a missing part)
  std::int64_t count = 0, steps = 0;
  std::int64_t in_rows = 0, in_cols = 0, out_rows = 0, out_cols = 0;  // softmax_ce: out_cols = C
  std::vector<float> inputs;         // [N, T, r, c]
  std::vector<float> targets;        // [N, T, r', c'], or softmax_ce's classes [N, T, r']
  std::vector<std::uint8_t> mask;    // [N, T], 0 or 1
};

struct UserData {
  std::array<UserSplit, 3> parts;  // by Split
  TargetKind kind = TargetKind::bits;
};

// Reads and checks the three parts (see above); throws an Error naming the file, the tensor and its shape.
UserData load_user_data(const UserDataOptions& o);

// Refuses a file of `bytes` that would not fit in `available` bytes of memory (available_memory(),
// runtime/sysfs.hpp), naming both.
void check_fits_in_memory(const std::string& path, double bytes, double available);

class UserDataTask : public SplitTask {
 public:
  explicit UserDataTask(UserDataOptions o);
  UserDataTask(UserDataOptions o, std::shared_ptr<const UserData> data);  // data already in memory
  const char* name() const override { return "data"; }
  void sample_step_into(std::int64_t step, Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  // B training sequences drawn uniformly from the Rng (examples, memory probes).
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "sequences"; }
  const char* example_name() const override { return "sequences"; }
  std::vector<std::int64_t> eval_sizes() const override { return {1}; }
  std::int64_t input_rows() const override { return train().in_rows; }
  std::int64_t input_cols() const override { return train().in_cols; }
  std::int64_t output_rows() const override { return train().out_rows; }
  std::int64_t output_cols() const override { return train().out_cols; }
  std::int64_t batch() const override { return o_.batch; }
  TargetKind target_kind() const override { return data_->kind; }
  std::int64_t split_size(Split s) const override { return data_->parts[std::size_t(s)].count; }
  void split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                        DType dtype = DType::f32) const override;
  std::vector<std::int64_t> epoch_order(std::int64_t epoch) const;  // positions in the train part
  const UserData& data() const { return *data_; }

 private:
  const UserSplit& train() const { return data_->parts[0]; }
  // Sequences index[0..count) of `part` as one batch.
  void fill(const UserSplit& part, const std::int64_t* index, std::int64_t count, Sequence& out, DType dtype) const;

  UserDataOptions o_;
  std::shared_ptr<const UserData> data_;
  mutable std::int64_t cached_epoch_ = -1;
  mutable std::vector<std::int64_t> order_, batch_index_;
};

}  // namespace matmem
