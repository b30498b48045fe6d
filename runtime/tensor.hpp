/// @file
/// Tensors: TensorView<T> is a non-owning (pointer, shape) pair, what kernels read and write; Tensor owns a
/// buffer of float or double chosen at run time (parameters, inputs, optimiser state). Values made during
/// a forward pass live in the tape's Arena instead.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "matmem/runtime/dtype.hpp"
#include "matmem/runtime/shape.hpp"

namespace matmem {

/// A non-owning view of `shape.numel()` elements of T at `data`, in the physical layout of runtime/shape.hpp.
template <class T>
struct TensorView {
  T* data = nullptr;  ///< the first element
  Shape shape;        ///< its logical shape

  /// Elements viewed.
  std::int64_t numel() const { return shape.numel(); }
  /// Logical element (b, n, i, j).
  T& at(std::int64_t b, std::int64_t n, std::int64_t i, std::int64_t j) const {
    return data[shape.offset(b, n, i, j)];
  }
  T& at(std::int64_t b, std::int64_t i, std::int64_t j) const { return at(b, 0, i, j); }  ///< [B,r,c]
  /// Element k in physical order.
  T& operator[](std::int64_t k) const { return data[k]; }
  T* begin() const { return data; }             ///< the first element, in physical order
  T* end() const { return data + numel(); }     ///< one past the last
  /// Sets every element to v.
  void fill(T v) const { std::fill(begin(), end(), v); }
  /// The same view, read-only.
  operator TensorView<const T>() const { return {data, shape}; }
};

/// A tensor that owns its elements, float32 or float64 chosen at run time (parameters, inputs, optimiser state).
class Tensor {
 public:
  /// An empty tensor of shape [0,0,0,0].
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  ///< zero-filled
  /// A deep copy.
  Tensor(const Tensor& other);
  /// Copies other's dtype, shape and elements.
  Tensor& operator=(const Tensor& other);
  /// Takes other's buffer; other holds none after.
  Tensor(Tensor&&) noexcept = default;
  /// Takes other's buffer; other holds none after.
  Tensor& operator=(Tensor&&) noexcept = default;

  DType dtype() const { return dtype_; }          ///< float32 or float64
  const Shape& shape() const { return shape_; }   ///< its shape
  std::int64_t numel() const { return shape_.numel(); }  ///< elements held
  /// Bytes its elements take.
  std::size_t bytes() const { return std::size_t(numel()) * size_of(dtype_); }
  void* raw() { return data_.get(); }              ///< the buffer, untyped
  const void* raw() const { return data_.get(); }  ///< the buffer, untyped, read-only

  /// Typed access; T must match dtype() (checked).
  template <class T>
  TensorView<T> view();
  /// Typed read-only access; T must match dtype() (checked).
  template <class T>
  TensorView<const T> view() const;

  /// Element k (flat, physical order) as double, whatever the dtype.
  double get(std::int64_t k) const;
  /// Sets element k (flat, physical order) from a double, whatever the dtype.
  void set(std::int64_t k, double v);
  /// Logical element (b, i, j) of a batch of matrices, as double.
  double at(std::int64_t b, std::int64_t i, std::int64_t j) const { return get(shape_.offset(b, 0, i, j)); }
  /// Sets every element to v.
  void fill(double v);
  bool all_finite() const;   ///< no NaN or Inf
  Tensor to(DType t) const;  ///< converted copy

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
