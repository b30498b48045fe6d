// Tensors: TensorView<T> is a non-owning (pointer, shape) pair, what kernels read and write; Tensor owns a
// buffer of float or double chosen at run time (parameters, inputs, optimiser state). Values made during
// a forward pass live in the tape's Arena instead.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "matmem/runtime/dtype.hpp"
#include "matmem/runtime/shape.hpp"

namespace matmem {

template <class T>
struct TensorView {
  T* data = nullptr;
  Shape shape;

  std::int64_t numel() const { return shape.numel(); }
  T& at(std::int64_t b, std::int64_t n, std::int64_t i, std::int64_t j) const {
    return data[shape.offset(b, n, i, j)];
  }
  T& at(std::int64_t b, std::int64_t i, std::int64_t j) const { return at(b, 0, i, j); }  // [B,r,c]
  T& operator[](std::int64_t k) const { return data[k]; }
  T* begin() const { return data; }
  T* end() const { return data + numel(); }
  void fill(T v) const { std::fill(begin(), end(), v); }
  operator TensorView<const T>() const { return {data, shape}; }
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t bytes() const { return std::size_t(numel()) * size_of(dtype_); }
  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }

  // Typed access; T must match dtype() (checked).
  template <class T>
  TensorView<T> view();
  template <class T>
  TensorView<const T> view() const;

  // Element k (flat, physical order) as double, whatever the dtype.
  double get(std::int64_t k) const;
  void set(std::int64_t k, double v);
  double at(std::int64_t b, std::int64_t i, std::int64_t j) const { return get(shape_.offset(b, 0, i, j)); }
  void fill(double v);
  bool all_finite() const;   // no NaN or Inf
  Tensor to(DType t) const;  // converted copy

 private:
  void check(DType t) const;
  DType dtype_ = DType::f32;
  Shape shape_{0, 0, 0, 0};
  std::unique_ptr<std::byte[]> data_;
};

template <class T>
TensorView<T> Tensor::view() {
  check(dtype_of<T>());
  return {reinterpret_cast<T*>(data_.get()), shape_};
}
template <class T>
TensorView<const T> Tensor::view() const {
  check(dtype_of<T>());
  return {reinterpret_cast<const T*>(data_.get()), shape_};
}

}  // namespace matmem
