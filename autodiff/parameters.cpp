#include "matmem/autodiff/parameters.hpp"

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

Parameter& ParameterStore::add(const std::string& name, Shape shape) {
  if (index_.count(name)) throw Error(fmt::format("parameter {} is defined twice", name));
  auto p = std::make_unique<Parameter>();
  p->name = name;
  p->value = Tensor(dtype_, shape);
  p->grad = Tensor(dtype_, shape);
  index_[name] = params_.size();
  params_.push_back(std::move(p));
  return *params_.back();
}

Parameter* ParameterStore::find(const std::string& name) {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : params_[it->second].get();
}

const Parameter& ParameterStore::at(const std::string& name) const {
  return const_cast<ParameterStore*>(this)->at(name);
}

Parameter& ParameterStore::at(const std::string& name) {
  if (Parameter* p = find(name)) return *p;
  std::string known;
  for (std::size_t k = 0; k < params_.size() && k < 8; ++k) known += (k ? ", " : "") + params_[k]->name;
  if (params_.size() > 8) known += ", ...";
  throw Error(fmt::format("no parameter named {} (the model has {})", name, known.empty() ? "none" : known));
}

std::int64_t ParameterStore::element_count() const {
  std::int64_t n = 0;
  for (const auto& p : params_)
    if (!p->buffer) n += p->value.numel();
  return n;
}

std::int64_t ParameterStore::buffer_element_count() const {
  std::int64_t n = 0;
  for (const auto& p : params_)
    if (p->buffer) n += p->value.numel();
  return n;
}

void ParameterStore::zero_grad() {
  for (auto& p : params_) p->grad.fill(0.0);
}

void ParameterStore::copy_values_from(const ParameterStore& other) {
  for (auto& p : params_) {
    const Parameter& q = other.at(p->name);
    if (q.value.shape() != p->value.shape())
      throw ShapeError(fmt::format("parameter {}: shape {} here, {} in the source", p->name, p->value.shape().str(),
                                   q.value.shape().str()));
    p->value = q.value.to(dtype_);
  }
}

}  // namespace matmem
