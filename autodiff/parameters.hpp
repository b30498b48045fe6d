// Named parameters (spec/style.md: "named parameters, keyed state").
//
// A Parameter has a path name ("ntm/write/erase/U"), a value and a gradient of the same shape. A
// ParameterStore owns them in creation order, finds them by name, and zeroes their gradients. Optimiser
// state and checkpoints are keyed by these names, never by position.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "matmem/runtime/tensor.hpp"

namespace matmem {

struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;
  // The tape leaf this parameter has on the tape pass `tape_epoch` (so each pass makes one leaf).
  std::uint64_t tape_epoch = 0;
  std::uint32_t tape_node = 0;
};

class ParameterStore {
 public:
  explicit ParameterStore(DType dtype = DType::f32) : dtype_(dtype) {}
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  DType dtype() const { return dtype_; }
  // Creates a zero-valued parameter; throws if the name is taken.
  Parameter& add(const std::string& name, Shape shape);
  // The named parameter; throws an Error naming it (and the closest names) if absent.
  Parameter& at(const std::string& name);
  const Parameter& at(const std::string& name) const;
  Parameter* find(const std::string& name);
  bool contains(const std::string& name) const { return index_.count(name) != 0; }

  std::size_t size() const { return params_.size(); }
  std::int64_t element_count() const;
  Parameter& operator[](std::size_t k) { return *params_[k]; }
  const Parameter& operator[](std::size_t k) const { return *params_[k]; }
  auto begin() { return params_.begin(); }
  auto end() { return params_.end(); }
  auto begin() const { return params_.begin(); }
  auto end() const { return params_.end(); }

  void zero_grad();
  // Copies every value (converting the dtype) from a store with the same names and shapes.
  void copy_values_from(const ParameterStore& other);

 private:
  DType dtype_;
  std::vector<std::unique_ptr<Parameter>> params_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace matmem
