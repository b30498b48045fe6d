/// @file
/// Named parameters (spec/style.md: "named parameters, keyed state").
///
/// A Parameter has a path name ("ntm/write/erase/U"), a value and a gradient of the same shape. A
/// ParameterStore owns them in creation order, finds them by name, and zeroes their gradients. Optimiser
/// state and checkpoints are keyed by these names, never by position.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "matmem/runtime/tensor.hpp"

namespace matmem {

/// A learned tensor: its path name, its value, and the gradient backward accumulates into.
struct Parameter {
  std::string name;  ///< a path, "ntm/write/erase/U"
  Tensor value;      ///< the value (the store's dtype)
  Tensor grad;       ///< the gradient, same shape; backward adds into it, zero_grad() clears it
  /// A buffer: state the model keeps but does not learn (batch norm's running statistics). Saved, restored
  /// and copied with the parameters; the optimisers, clipping and the gradient norm leave it out.
  bool buffer = false;
  /// The tape leaf this parameter has on the tape pass `tape_epoch` (so each pass makes one leaf).
  std::uint64_t tape_epoch = 0;
  std::uint32_t tape_node = 0;  ///< that leaf's node id
};

/// The parameters of a model, in creation order, found by name.
class ParameterStore {
 public:
  /// An empty store whose parameters will hold `dtype`.
  explicit ParameterStore(DType dtype = DType::f32) : dtype_(dtype) {}
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  /// The element type of every parameter.
  DType dtype() const { return dtype_; }
  /// Creates a zero-valued parameter; throws if the name is taken.
  Parameter& add(const std::string& name, Shape shape);
  /// The named parameter; throws an Error naming it (and the store's first names) if absent.
  Parameter& at(const std::string& name);
  /// The named parameter, read-only; throws as at() does.
  const Parameter& at(const std::string& name) const;
  /// The named parameter, or nullptr.
  Parameter* find(const std::string& name);
  /// True when a parameter has this name.
  bool contains(const std::string& name) const { return index_.count(name) != 0; }

  /// Number of parameters.
  std::size_t size() const { return params_.size(); }
  /// Elements of the learned parameters together (buffers, Parameter::buffer, not counted).
  std::int64_t element_count() const;
  /// Elements of the buffers together.
  std::int64_t buffer_element_count() const;
  /// Parameter k in creation order.
  Parameter& operator[](std::size_t k) { return *params_[k]; }
  /// Parameter k in creation order, read-only.
  const Parameter& operator[](std::size_t k) const { return *params_[k]; }
  /// Iteration in creation order (over std::unique_ptr<Parameter>).
  auto begin() { return params_.begin(); }
  auto end() { return params_.end(); }              ///< end of the iteration
  auto begin() const { return params_.begin(); }    ///< iteration in creation order, read-only
  auto end() const { return params_.end(); }        ///< end of the iteration, read-only

  /// Sets every gradient to zero.
  void zero_grad();
  /// Copies every value (converting the dtype) from a store with the same names and shapes.
  void copy_values_from(const ParameterStore& other);

 private:
  DType dtype_;
  std::vector<std::unique_ptr<Parameter>> params_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace matmem
