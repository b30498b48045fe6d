#include "runtime/tensor.hpp"

#include <fmt/format.h>

#include "runtime/error.hpp"

namespace matmem {

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(shape), data_(new std::byte[std::max<std::size_t>(bytes(), 1)]()) {}

// A default-constructed (or moved-from) tensor holds no data: its copy holds none either.
Tensor::Tensor(const Tensor& other) : dtype_(other.dtype_), shape_(other.shape_) {
  if (!other.data_) return;
  data_.reset(new std::byte[std::max<std::size_t>(bytes(), 1)]);
  std::memcpy(data_.get(), other.data_.get(), bytes());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::check(DType t) const {
  if (t != dtype_)
    throw Error(fmt::format("tensor {} holds {}, accessed as {}", shape_.str(), name_of(dtype_), name_of(t)));
}

double Tensor::get(std::int64_t k) const {
  return dtype_ == DType::f32 ? double(reinterpret_cast<const float*>(data_.get())[k])
                              : reinterpret_cast<const double*>(data_.get())[k];
}

void Tensor::set(std::int64_t k, double v) {
  if (dtype_ == DType::f32)
    reinterpret_cast<float*>(data_.get())[k] = float(v);
  else
    reinterpret_cast<double*>(data_.get())[k] = v;
}

void Tensor::fill(double v) {
  dispatch(dtype_, [&](auto z) { view<decltype(z)>().fill(decltype(z)(v)); });
}

Tensor Tensor::to(DType t) const {
  Tensor out(t, shape_);
  for (std::int64_t k = 0; k < numel(); ++k) out.set(k, get(k));
  return out;
}

}  // namespace matmem
