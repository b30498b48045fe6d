#include "matmem/models/data/fashion_reconstruction.hpp"

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

FashionMnistReconstructionTask::FashionMnistReconstructionTask(FashionMnistOptions o, double noise)
    : FashionMnistReconstructionTask(o, noise, load_fashion_mnist(o.data_dir)) {}

FashionMnistReconstructionTask::FashionMnistReconstructionTask(FashionMnistOptions o, double noise,
                                                               std::shared_ptr<const ImageSet> data)
    : images_(o, data), data_(std::move(data)), noise_(noise) {
  if (!(noise >= 0 && noise < 1))
    throw Error(fmt::format("fashion_mnist_ae: task.noise = {} must be in [0, 1)", noise));
}

std::pair<std::int64_t, std::int64_t> FashionMnistReconstructionTask::patch_of(std::int64_t index) const {
  Rng rng((images_.options().split_seed ^ 0xb1ac0b1ac0b1ac0bULL) + 0x9e3779b97f4a7c15ULL * std::uint64_t(index + 1));
  const std::int64_t i = rng.uniform_int(std::int64_t(0), data_->rows - kPatch);
  const std::int64_t j = rng.uniform_int(std::int64_t(0), data_->cols - kPatch);
  return {i, j};
}

template <class Corrupt>
void FashionMnistReconstructionTask::fill(const std::int64_t* index, std::int64_t count, Sequence& s, DType dtype,
                                          Corrupt corrupt) const {
  s.reset();
  s.kind = TargetKind::reals;
  const std::int64_t R = data_->rows, C = data_->cols, rows = input_rows(), cols = input_cols();
  Tensor& x = s.add_input(dtype, matrices(count, rows, cols));
  Tensor& y = s.add_target(dtype, matrices(count, rows, cols), 0);
  std::vector<double> clean(std::size_t(R * C)), noisy(std::size_t(R * C));
  dispatch(dtype, [&](auto z) {
    using T = decltype(z);
    const TensorView<T> xv = x.view<T>(), yv = y.view<T>();
    for (std::int64_t b = 0; b < count; ++b) {
      const std::uint8_t* image = data_->pixels.data() + index[b] * R * C;
      for (std::int64_t k = 0; k < R * C; ++k) clean[std::size_t(k)] = noisy[std::size_t(k)] = double(image[k]) / 255;
      corrupt(b, index[b], noisy);
      for (std::int64_t k = 0; k < R * C; ++k) {
        const std::int64_t i = rows == 1 ? 0 : k / C, j = rows == 1 ? k : k % C;
        xv.at(b, i, j) = T(noisy[std::size_t(k)]);
        yv.at(b, i, j) = T(clean[std::size_t(k)]);
      }
    }
  });
}

void FashionMnistReconstructionTask::sample_step_into(std::int64_t step, Rng&, Sequence& out, DType dtype) const {
  const std::int64_t B = batch(), E = steps_per_epoch(), epoch = step / E, at = (step % E) * B;
  if (epoch != cached_epoch_) {
    order_ = images_.epoch_order(epoch);
    cached_epoch_ = epoch;
  }
  batch_index_.resize(std::size_t(B));
  const std::vector<std::int64_t>& train = images_.split_indices(Split::train);
  for (std::int64_t b = 0; b < B; ++b) batch_index_[std::size_t(b)] = train[std::size_t(order_[std::size_t(at + b)])];
  Rng noise((images_.options().seed ^ 0x4015e4015e4015e4ULL) + 0x9e3779b97f4a7c15ULL * std::uint64_t(step + 1));
  fill(batch_index_.data(), B, out, dtype, [&](std::int64_t, std::int64_t, std::vector<double>& pixels) {
    for (double& p : pixels)
      if (noise.uniform() < noise_) p = 0;
  });
}

void FashionMnistReconstructionTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  std::vector<std::int64_t> index(static_cast<std::size_t>(batch()));
  const std::vector<std::int64_t>& train = images_.split_indices(Split::train);
  for (auto& i : index) i = train[rng.uniform_int(std::uint64_t(train.size()))];
  fill(index.data(), batch(), out, dtype, [&](std::int64_t, std::int64_t, std::vector<double>& pixels) {
    for (double& p : pixels)
      if (rng.uniform() < noise_) p = 0;
  });
}

void FashionMnistReconstructionTask::sample_size_into(Rng& rng, std::int64_t, Sequence& out, DType dtype) const {
  sample_into(rng, out, dtype);
}

void FashionMnistReconstructionTask::split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                                                      DType dtype) const {
  const std::vector<std::int64_t>& part = images_.split_indices(s);
  if (first < 0 || count < 1 || first + count > std::int64_t(part.size()))
    throw Error(fmt::format("fashion_mnist_ae: images {}..{} of the {} part, which holds {}", first, first + count - 1,
                            split_name(s), part.size()));
  const std::int64_t C = data_->cols;
  fill(part.data() + first, count, out, dtype, [&](std::int64_t, std::int64_t image, std::vector<double>& pixels) {
    const auto [i0, j0] = patch_of(image);
    for (std::int64_t i = i0; i < i0 + kPatch; ++i)
      for (std::int64_t j = j0; j < j0 + kPatch; ++j) pixels[std::size_t(i * C + j)] = 0;
  });
}

}  // namespace matmem
