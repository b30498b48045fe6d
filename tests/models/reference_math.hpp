// Shared by the model tests that check a forward pass by value: plain dense matrices and loops, written
// independently of ops/ and the models, so an expected output computed with them does not call the code
// under test. A Mat is one sample's r × c matrix, row-major; values come from a Model's parameters
// (param: a [1,r,c] parameter) and from a batch's frames (frame: sample b of a [B,r,c] tensor).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"

namespace matmem::testing::ref {

struct Mat {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> a;
  Mat() = default;
  Mat(std::int64_t r, std::int64_t c, double fill = 0.0) : rows(r), cols(c), a(std::size_t(r * c), fill) {}
  double& operator()(std::int64_t i, std::int64_t j) { return a[std::size_t(i * cols + j)]; }
  double operator()(std::int64_t i, std::int64_t j) const { return a[std::size_t(i * cols + j)]; }
};

inline Mat frame(const Tensor& x, std::int64_t b) {
  Mat m(x.shape().rows, x.shape().cols);
  for (std::int64_t i = 0; i < m.rows; ++i)
    for (std::int64_t j = 0; j < m.cols; ++j) m(i, j) = x.at(b, i, j);
  return m;
}

// The parameter `name` of `m` (a [1,r,c] parameter); REQUIREs that it exists.
inline Mat param(const Model& m, const std::string& name) {
  INFO("parameter " << name);
  REQUIRE(m.params().contains(name));
  return frame(m.params().at(name).value, 0);
}

// The scalar parameter `name` ([1,1]).
inline double scalar(const Model& m, const std::string& name) { return param(m, name)(0, 0); }

inline Mat transpose(const Mat& x) {
  Mat y(x.cols, x.rows);
  for (std::int64_t i = 0; i < x.rows; ++i)
    for (std::int64_t j = 0; j < x.cols; ++j) y(j, i) = x(i, j);
  return y;
}

inline Mat matmul(const Mat& x, const Mat& y) {
  REQUIRE(x.cols == y.rows);
  Mat z(x.rows, y.cols);
  for (std::int64_t i = 0; i < x.rows; ++i)
    for (std::int64_t j = 0; j < y.cols; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < x.cols; ++k) s += x(i, k) * y(k, j);
      z(i, j) = s;
    }
  return z;
}

// Uᵀ X V
inline Mat bilinear(const Mat& x, const Mat& u, const Mat& v) { return matmul(matmul(transpose(u), x), v); }

inline Mat zip(const Mat& x, const Mat& y, const std::function<double(double, double)>& f) {
  REQUIRE(x.rows == y.rows);
  REQUIRE(x.cols == y.cols);
  Mat z(x.rows, x.cols);
  for (std::size_t k = 0; k < z.a.size(); ++k) z.a[k] = f(x.a[k], y.a[k]);
  return z;
}
inline Mat map(const Mat& x, const std::function<double(double)>& f) {
  Mat y = x;
  for (double& v : y.a) v = f(v);
  return y;
}
inline Mat operator+(const Mat& x, const Mat& y) { return zip(x, y, [](double p, double q) { return p + q; }); }
inline Mat operator-(const Mat& x, const Mat& y) { return zip(x, y, [](double p, double q) { return p - q; }); }
inline Mat operator*(double s, const Mat& x) { return map(x, [s](double v) { return s * v; }); }
inline Mat hadamard(const Mat& x, const Mat& y) { return zip(x, y, [](double p, double q) { return p * q; }); }
inline double frobenius(const Mat& x, const Mat& y) {
  double s = 0;
  for (std::size_t k = 0; k < x.a.size(); ++k) s += x.a[k] * y.a[k];
  return s;
}

inline double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
inline double softplus(double x) { return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0); }
inline Mat tanh(const Mat& x) { return map(x, [](double v) { return std::tanh(v); }); }
inline Mat sigmoid(const Mat& x) { return map(x, [](double v) { return sigmoid(v); }); }
inline Mat relu(const Mat& x) { return map(x, [](double v) { return v > 0 ? v : 0.0; }); }

// (x − mean)/√(var + ε) over the whole matrix, the variance with 1/n (Ba, Kiros & Hinton 2016).
inline Mat layer_norm(const Mat& x, double eps = 1e-5) {
  const double n = double(x.a.size());
  double mean = 0, var = 0;
  for (double v : x.a) mean += v;
  mean /= n;
  for (double v : x.a) var += (v - mean) * (v - mean);
  var /= n;
  return map(x, [&](double v) { return (v - mean) / std::sqrt(var + eps); });
}

// A sequence of `steps` random frames [batch, in_rows, in_cols] in (−1, 1), with zero targets
// [batch, out_rows, out_cols] at `target_steps`: the model's logits there are what a test reads.
inline Sequence frames_with_targets(const Model& m, std::int64_t batch, int steps, const std::vector<int>& target_steps,
                                    std::uint64_t seed) {
  Rng rng(seed);
  Sequence s;
  for (int t = 0; t < steps; ++t) {
    Tensor& x = s.add_input(DType::f64, matrices(batch, m.input_rows(), m.input_cols()));
    for (std::int64_t k = 0; k < x.numel(); ++k) x.set(k, rng.uniform(-1, 1));
  }
  for (int t : target_steps) s.add_target(DType::f64, matrices(batch, m.output_rows(), m.output_cols()), t);
  return s;
}

// CHECKs every element of sample b of `y` ([B,r,c]) against `expected`, relative to the largest |expected|.
inline void check_equal(const Tensor& y, std::int64_t b, const Mat& expected, double rel = 1e-10) {
  REQUIRE(y.shape().rows == expected.rows);
  REQUIRE(y.shape().cols == expected.cols);
  double largest = 0;
  for (double v : expected.a) largest = std::max(largest, std::abs(v));
  for (std::int64_t i = 0; i < expected.rows; ++i)
    for (std::int64_t j = 0; j < expected.cols; ++j) {
      INFO("sample " << b << " element (" << i << ", " << j << ")");
      CHECK(y.at(b, i, j) == Approx(expected(i, j)).margin(rel * std::max(largest, 1.0)));
    }
}

}  // namespace matmem::testing::ref
