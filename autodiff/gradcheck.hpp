// gradcheck: compares the gradients the tape computes with central differences, in float64.
//
// For a function y = f(x_1..x_m; θ) of input tensors and parameters, with a random upstream gradient g
// (standard normal, never all-ones: that hides symmetric bugs), the analytical gradient of L = <g, y> is
// one backward pass; the numerical one perturbs every element e of every input and parameter:
//     dL/de ≈ (<g, f(e + h)> - <g, f(e - h)>) / 2h.
// With `full_jacobian`, every column of the numerical Jacobian dy/de is compared as well with the rows
// the tape gives for one-hot upstream gradients (one backward per output element).
// An element passes when |analytical - numerical| <= atol + rtol * max(|analytical|, |numerical|); the
// reported relative error is |analytical - numerical| / max(|analytical|, |numerical|, atol / rtol).
// When something fails, `locate_op` gradchecks every op node of the tape alone at the values it saw, and
// the report names the first op whose own backward disagrees with its forward.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "matmem/autodiff/parameters.hpp"
#include "matmem/autodiff/tape.hpp"

namespace matmem {

struct GradcheckInput {
  std::string name;
  Tensor value;  // float64
  bool differentiable = true;
};

using GradcheckFn = std::function<Var(Tape& tape, std::span<const Var> inputs)>;

struct GradcheckOptions {
  double step = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-5;
  std::uint64_t seed = 1;
  bool full_jacobian = false;
  bool check_parameters = true;
  bool locate_op = true;
  int max_failures_listed = 5;
};

struct GradcheckMismatch {
  std::string tensor;  // input or parameter name
  Shape shape;
  std::int64_t b = 0, n = 0, i = 0, j = 0;
  std::string output;  // for full-Jacobian mismatches: the output element
  double numerical = 0, analytical = 0;
};

struct GradcheckReport {
  bool passed = true;
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::int64_t elements_checked = 0;
  std::vector<GradcheckMismatch> failures;  // the first few
  std::string failing_op;                   // from locate_op, when found
  std::string str() const;                  // a readable summary
};

GradcheckReport gradcheck(const GradcheckFn& f, std::vector<GradcheckInput>& inputs, ParameterStore* params,
                          const GradcheckOptions& options = {});

}  // namespace matmem
