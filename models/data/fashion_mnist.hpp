// Fashion-MNIST classification (Xiao, Rasul & Vollgraf 2017): 70,000 grey 28×28 images of ten kinds of
// clothing, read from the IDX files of Debian's dataset-fashion-mnist (models/data/idx.hpp). It stands in for
// the MNIST digits of 001 §4.1.1, which Debian does not package: the same sizes, format and number of classes.
//
// Data: the 60,000 training and 10,000 test images of the files, concatenated (train first), then split anew
// by a permutation drawn from task.split_seed into train / validation / test parts of the configured sizes
// (55,000 / 5,000 / 10,000 by default; the sizes may add up to less than 70,000, never more).
// A sample is one frame, the image as a 28×28 matrix with pixel values / 255 in [0, 1] (or, task.flatten,
// one 1×784 row: the vector nets' input, the rows one after another), and one target at step 0: the class
// as a one-hot 1×10 row (TargetKind::classes: the loss the softmax cross-entropy, the cost the errors per
// image, i.e. the error rate; accuracy = 1 − cost).
//
// Epochs: training step k (0-based) takes the images at positions (k mod E)·B … (k mod E)·B + B − 1 of epoch
// e = ⌊k / E⌋'s order, E = ⌊train / B⌋ steps an epoch (the last train mod B images of an order wait for a later
// epoch's). Epoch e's order is a Fisher–Yates shuffle of the train part drawn from an Rng seeded by the run's
// seed and e, so the batch of a step depends only on (seed, k): a resumed run draws exactly the batches of an
// uninterrupted one, and two runs of one seed are identical bit for bit.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

struct FashionMnistOptions {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::int64_t train = 55000, validation = 5000, test = 10000, batch = 64;
  std::uint64_t split_seed = 1;  // the split
  std::uint64_t seed = 1;        // the run's: the epochs' orders
  bool flatten = false;          // 1×784 frames instead of 28×28
};

// The images [N, 28, 28] and labels [N] of a data set, as the files hold them.
struct ImageSet {
  std::vector<std::uint8_t> pixels;  // N·rows·cols
  std::vector<std::uint8_t> labels;  // N, each < classes
  std::int64_t count = 0, rows = 28, cols = 28, classes = 10;
};
// Reads DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (or the same names without .gz) and concatenates
// them, train first. Refuses files whose counts or image sizes disagree, or a label ≥ 10, naming the file.
// Cached by directory: a second task on the same data reads nothing.
std::shared_ptr<const ImageSet> load_fashion_mnist(const std::string& dir);

class FashionMnistTask : public SplitTask {
 public:
  explicit FashionMnistTask(FashionMnistOptions o);
  FashionMnistTask(FashionMnistOptions o, std::shared_ptr<const ImageSet> data);  // data already in memory
  const char* name() const override { return "fashion_mnist"; }
  // Training's batches: step k of the run as the comment above says; the Rng is not used.
  void sample_step_into(std::int64_t step, Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  // B training images drawn uniformly from the Rng (examples, memory probes).
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "images"; }
  const char* example_name() const override { return "images"; }
  std::vector<std::int64_t> eval_sizes() const override { return {1}; }
  std::int64_t input_rows() const override { return o_.flatten ? 1 : data_->rows; }
  std::int64_t input_cols() const override { return o_.flatten ? data_->rows * data_->cols : data_->cols; }
  std::int64_t output_rows() const override { return 1; }
  std::int64_t output_cols() const override { return data_->classes; }
  std::int64_t batch() const override { return o_.batch; }
  TargetKind target_kind() const override { return TargetKind::classes; }
  std::int64_t split_size(Split s) const override;
  void split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                        DType dtype = DType::f32) const override;
  // The image indices (into the data) of part `s`, and epoch e's order of the train part (positions in it).
  const std::vector<std::int64_t>& split_indices(Split s) const;
  std::vector<std::int64_t> epoch_order(std::int64_t epoch) const;
  const FashionMnistOptions& options() const { return o_; }

 private:
  // The images data index[0..count) as one batch.
  void fill(const std::int64_t* index, std::int64_t count, Sequence& out, DType dtype) const;

  FashionMnistOptions o_;
  std::shared_ptr<const ImageSet> data_;
  std::vector<std::int64_t> parts_[3];
  // The last epoch's order, kept: a step computes it once an epoch.
  mutable std::int64_t cached_epoch_ = -1;
  mutable std::vector<std::int64_t> order_, batch_index_;
};

}  // namespace matmem
