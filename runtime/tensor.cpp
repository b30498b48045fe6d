#include "matmem/runtime/tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

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

namespace {
// Whether no element's exponent field is all ones (Inf or NaN). An integer max over the fields vectorises;
// a test of each value that stops at the first bad one does not.
template <class U>
bool exponents_finite(const std::byte* data, std::int64_t n, U exponent) {
  U top = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    U bits;
    std::memcpy(&bits, data + std::size_t(k) * sizeof(U), sizeof(U));
    top = std::max(top, U(bits & exponent));
  }
  return top != exponent;
}
}  // namespace

bool Tensor::all_finite() const {
  if (dtype_ == DType::f32) return exponents_finite<std::uint32_t>(data_.get(), numel(), 0x7f800000u);
  return exponents_finite<std::uint64_t>(data_.get(), numel(), 0x7ff0000000000000ull);
}

Tensor Tensor::to(DType t) const {
  Tensor out(t, shape_);
  for (std::int64_t k = 0; k < numel(); ++k) out.set(k, get(k));
  return out;
}

}  // namespace matmem
