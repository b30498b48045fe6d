#include "matmem/models/data/fashion_mnist.hpp"

#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>

#include <fmt/format.h>

#include "matmem/models/data/idx.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

namespace {
// DIR/NAME.gz, or DIR/NAME when only the uncompressed file is there.
std::string data_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path gz = fs::path(dir) / (name + ".gz"), plain = fs::path(dir) / name;
  if (!fs::exists(gz) && fs::exists(plain)) return plain.string();
  if (!fs::exists(gz))
    throw Error(fmt::format("fashion_mnist: {} not found (nor {}); install Debian's dataset-fashion-mnist or set "
                            "task.data_dir to a directory holding the IDX files",
                            gz.string(), plain.string()));
  return gz.string();
}

void append(ImageSet& set, const std::string& dir, const std::string& prefix) {
  const std::string images_path = data_file(dir, prefix + "-images-idx3-ubyte"),
                    labels_path = data_file(dir, prefix + "-labels-idx1-ubyte");
  const IdxArray images = read_idx(images_path), labels = read_idx(labels_path);
  if (images.dims.size() != 3 || images.dims[1] != set.rows || images.dims[2] != set.cols)
    throw Error(fmt::format("{}: holds {} dimensions, not images [N, {}, {}]", images_path, images.dims.size(),
                            set.rows, set.cols));
  if (labels.dims.size() != 1) throw Error(fmt::format("{}: holds {} dimensions, not labels [N]", labels_path, labels.dims.size()));
  if (labels.count() != images.count())
    throw Error(fmt::format("{}: {} labels for the {} images of {}", labels_path, labels.count(), images.count(),
                            images_path));
  for (std::int64_t k = 0; k < labels.count(); ++k)
    if (labels.data[std::size_t(k)] >= set.classes)
      throw Error(fmt::format("{}: label {} of item {} is not a class 0..{}", labels_path, labels.data[std::size_t(k)],
                              k, set.classes - 1));
  set.pixels.insert(set.pixels.end(), images.data.begin(), images.data.end());
  set.labels.insert(set.labels.end(), labels.data.begin(), labels.data.end());
  set.count += images.count();
}

// A Fisher–Yates shuffle of 0..n−1 from `rng`.
std::vector<std::int64_t> permutation(std::int64_t n, Rng& rng) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  for (std::int64_t k = n - 1; k > 0; --k) std::swap(p[std::size_t(k)], p[std::size_t(rng.uniform_int(std::int64_t(0), k))]);
  return p;
}
}  // namespace

std::shared_ptr<const ImageSet> load_fashion_mnist(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const ImageSet>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(dir); it != cache.end()) return it->second;
  auto set = std::make_shared<ImageSet>();
  append(*set, dir, "train");
  append(*set, dir, "t10k");
  cache[dir] = set;
  return set;
}

FashionMnistTask::FashionMnistTask(FashionMnistOptions o) : FashionMnistTask(o, load_fashion_mnist(o.data_dir)) {}

FashionMnistTask::FashionMnistTask(FashionMnistOptions o, std::shared_ptr<const ImageSet> data)
    : o_(std::move(o)), data_(std::move(data)) {
  if (o_.batch < 1) throw Error(fmt::format("fashion_mnist: batch = {} must be ≥ 1", o_.batch));
  if (o_.train < 1 || o_.validation < 0 || o_.test < 0)
    throw Error(fmt::format("fashion_mnist: task.train = {}, task.validation = {}, task.test = {}: train needs at "
                            "least one image, the others none or more",
                            o_.train, o_.validation, o_.test));
  if (o_.train + o_.validation + o_.test > data_->count)
    throw Error(fmt::format("fashion_mnist: task.train + task.validation + task.test = {} + {} + {} exceeds the {} "
                            "images of the data",
                            o_.train, o_.validation, o_.test, data_->count));
  if (o_.train < o_.batch)
    throw Error(fmt::format("fashion_mnist: task.train = {} is smaller than one batch ({})", o_.train, o_.batch));
  Rng rng(o_.split_seed ^ 0x5b1e5b1e5b1e5b1eULL);
  const std::vector<std::int64_t> all = permutation(data_->count, rng);
  const std::int64_t sizes[3] = {o_.train, o_.validation, o_.test};
  std::int64_t at = 0;
  for (int s = 0; s < 3; ++s) {
    parts_[s].assign(all.begin() + at, all.begin() + at + sizes[s]);
    at += sizes[s];
  }
}

std::int64_t FashionMnistTask::split_size(Split s) const { return std::int64_t(parts_[int(s)].size()); }

const std::vector<std::int64_t>& FashionMnistTask::split_indices(Split s) const { return parts_[int(s)]; }

std::vector<std::int64_t> FashionMnistTask::epoch_order(std::int64_t epoch) const {
  Rng rng((o_.seed ^ 0xe90c4e90c4e90c4eULL) + 0x9e3779b97f4a7c15ULL * std::uint64_t(epoch + 1));
  return permutation(o_.train, rng);
}

void FashionMnistTask::fill(const std::int64_t* index, std::int64_t count, Sequence& s, DType dtype) const {
  s.reset();
  s.kind = TargetKind::classes;
  Tensor& x = s.add_input(dtype, matrices(count, input_rows(), input_cols()));
  Tensor& y = s.add_target(dtype, matrices(count, 1, data_->classes), 0);
  const std::int64_t R = data_->rows, C = data_->cols;
  dispatch(dtype, [&](auto z) {
    using T = decltype(z);
    const TensorView<T> xv = x.view<T>();
    const TensorView<T> yv = y.view<T>();
    for (std::int64_t b = 0; b < count; ++b) {
      const std::uint8_t* image = data_->pixels.data() + index[b] * R * C;
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < C; ++j) {
          const T v = T(image[i * C + j]) / T(255);
          if (o_.flatten) xv.at(b, 0, i * C + j) = v;
          else xv.at(b, i, j) = v;
        }
      yv.at(b, 0, data_->labels[std::size_t(index[b])]) = T(1);
    }
  });
}

void FashionMnistTask::sample_step_into(std::int64_t step, Rng&, Sequence& out, DType dtype) const {
  const std::int64_t E = steps_per_epoch(), epoch = step / E, at = (step % E) * o_.batch;
  if (epoch != cached_epoch_) {
    order_ = epoch_order(epoch);
    cached_epoch_ = epoch;
  }
  batch_index_.resize(std::size_t(o_.batch));
  const std::vector<std::int64_t>& train = parts_[int(Split::train)];
  for (std::int64_t b = 0; b < o_.batch; ++b) batch_index_[std::size_t(b)] = train[std::size_t(order_[std::size_t(at + b)])];
  fill(batch_index_.data(), o_.batch, out, dtype);
}

void FashionMnistTask::sample_into(Rng& rng, Sequence& out, DType dtype) const {
  std::vector<std::int64_t> index(std::size_t(o_.batch));
  const std::vector<std::int64_t>& train = parts_[int(Split::train)];
  for (auto& i : index) i = train[rng.uniform_int(std::uint64_t(train.size()))];
  fill(index.data(), o_.batch, out, dtype);
}

void FashionMnistTask::sample_size_into(Rng& rng, std::int64_t, Sequence& out, DType dtype) const {
  sample_into(rng, out, dtype);
}

void FashionMnistTask::split_batch_into(Split s, std::int64_t first, std::int64_t count, Sequence& out,
                                        DType dtype) const {
  const std::vector<std::int64_t>& part = parts_[int(s)];
  if (first < 0 || count < 1 || first + count > std::int64_t(part.size()))
    throw Error(fmt::format("fashion_mnist: images {}..{} of the {} part, which holds {}", first, first + count - 1,
                            split_name(s), part.size()));
  fill(part.data() + first, count, out, dtype);
}

}  // namespace matmem
