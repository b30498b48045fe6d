// Corrupted-image reconstruction on Fashion-MNIST (001 §4.1.2, where Frey Face is used; Debian packages no
// Frey Face, and Fashion-MNIST's images stand in for it): the input is a corrupted image, the target the
// clean one (TargetKind::reals: the loss the mean squared error, the cost the normalised MSE).
//
// The images, split, frames (28×28, or 1×784 with task.flatten) and epochs are Fashion-MNIST's
// (models/data/fashion_mnist.hpp). The corruption:
//   training (step k): masking noise, each pixel set to 0 (black) with probability task.noise (001: "random
//     noise added to the input with ratio of 0.2"), drawn from an Rng seeded by the run's seed and k, so a
//     resumed run draws the same noise;
//   evaluation (any part's batch, split_batch_into): a 5×5 black square at a position uniform over the
//     24 × 24 places it fits, drawn from an Rng seeded by task.split_seed and the image's index: every model
//     sees the same corrupted test set.
#pragma once
#include "matmem/models/data/fashion_mnist.hpp"

namespace matmem {

class FashionMnistReconstructionTask : public SplitTask {
 public:
  static constexpr std::int64_t kPatch = 5;
  FashionMnistReconstructionTask(FashionMnistOptions o, double noise);
  FashionMnistReconstructionTask(FashionMnistOptions o, double noise, std::shared_ptr<const ImageSet> data);
  const char* name() const override { return "fashion_mnist_ae"; }
  void sample_step_into(std::int64_t step, Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_into(Rng& rng, Sequence& out, DType dtype = DType::f32) const override;
  void sample_size_into(Rng& rng, std::int64_t size, Sequence& out, DType dtype = DType::f32) const override;
  const char* size_name() const override { return "images"; }
  const char* example_name() const override { return "images"; }
  std::vector<std::int64_t> eval_sizes() const override { return {1}; }
  std::int64_t input_rows() const override { return images_.input_rows(); }
  std::int64_t input_cols() const override { return images_.input_cols(); }
  std::int64_t output_rows() const override { return images_.input_rows(); }
  std::int64_t output_cols() const override { return images_.input_cols(); }
  std::int64_t batch() const override { return images_.batch(); }
  TargetKind target_kind() const override { return TargetKind::reals; }
  std::int64_t split_size(Split s) const override { return images_.split_size(s); }
  void split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                        DType dtype = DType::f32) const override;
  // Where image `index`'s evaluation patch starts (row, column).
  std::pair<std::int64_t, std::int64_t> patch_of(std::int64_t index) const;
  const FashionMnistTask& images() const { return images_; }  // the split and the epochs' orders

 private:
  // Images index[0..count), corrupted by `corrupt(b, image, pixels)` (pixels: the 784 values of sample b).
  template <class Corrupt>
  void fill(const std::int64_t* index, std::int64_t count, Sequence& out, DType dtype, Corrupt corrupt) const;

  FashionMnistTask images_;  // the split and the epochs' orders
  std::shared_ptr<const ImageSet> data_;
  double noise_;
  mutable std::int64_t cached_epoch_ = -1;
  mutable std::vector<std::int64_t> order_, batch_index_;
};

}  // namespace matmem
