/// @file
/// gradcheck: compares the gradients the tape computes with central differences, in float64.
///
/// For a function y = f(x_1..x_m; θ) of input tensors and parameters, with a random upstream gradient g
/// (standard normal, never all-ones: that hides symmetric bugs), the analytical gradient of L = ⟨g, y⟩ is
/// one backward pass; the numerical one perturbs every element e of every input and parameter:
///
///     dL/de ≈ (⟨g, f(e + h)⟩ - ⟨g, f(e - h)⟩) / 2h.
///
/// With `full_jacobian`, every column of the numerical Jacobian dy/de is compared as well with the rows
/// the tape gives for one-hot upstream gradients (one backward per output element).
/// An element passes when |analytical - numerical| <= atol + rtol * max(|analytical|, |numerical|); the
/// reported relative error is |analytical - numerical| / max(|analytical|, |numerical|, atol / rtol).
/// When something fails, `locate_op` gradchecks every op node of the tape alone at the values it saw, and
/// the report names the first op whose own backward disagrees with its forward.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "matmem/autodiff/parameters.hpp"
#include "matmem/autodiff/tape.hpp"

namespace matmem {

/// An input of the function gradchecked.
struct GradcheckInput {
  std::string name;  ///< as the report names it
  Tensor value;  ///< float64
  bool differentiable = true;  ///< false: an input whose gradient is not checked (a target, an index)
};

/// The function gradchecked: records y = f(inputs; parameters) on `tape` and returns y.
using GradcheckFn = std::function<Var(Tape& tape, std::span<const Var> inputs)>;

/// Step, tolerances and what gradcheck() compares (see the file).
struct GradcheckOptions {
  double step = 1e-6;  ///< h of the central differences
  double atol = 1e-6;  ///< absolute tolerance
  double rtol = 1e-5;  ///< relative tolerance
  std::uint64_t seed = 1;  ///< of the random upstream gradient g
  bool full_jacobian = false;  ///< also compare every column of the Jacobian
  bool check_parameters = true;  ///< also perturb every parameter of the store
  bool locate_op = true;  ///< on a failure, gradcheck each op node alone to name the first that disagrees
  int max_failures_listed = 5;  ///< mismatches kept in the report
};

/// One element whose analytical and numerical gradients disagree.
struct GradcheckMismatch {
  std::string tensor;  ///< input or parameter name
  Shape shape;  ///< its shape
  std::int64_t b = 0, n = 0, i = 0, j = 0;  ///< the element (b, n, i, j)
  std::string output;  ///< for full-Jacobian mismatches: the output element
  double numerical = 0, analytical = 0;  ///< the two gradients
};

/// What gradcheck() found for one input or parameter.
struct GradcheckTensor {
  std::string name;  ///< input or parameter name
  Shape shape;  ///< its shape
  std::int64_t elements_checked = 0;  ///< its elements perturbed
  double max_abs_error = 0;  ///< largest |analytical - numerical| over its elements
  double max_rel_error = 0;  ///< largest relative error (see the file) over its elements
  std::int64_t failed = 0;  ///< comparisons outside the tolerance (with `full_jacobian`, per Jacobian entry too)
};

/// What gradcheck() found.
struct GradcheckReport {
  bool passed = true;  ///< every element within tolerance
  double max_abs_error = 0;  ///< largest |analytical - numerical|
  double max_rel_error = 0;  ///< largest relative error (see the file)
  std::int64_t elements_checked = 0;  ///< input and parameter elements perturbed
  std::vector<GradcheckMismatch> failures;  ///< the first few
  std::vector<GradcheckTensor> tensors;     ///< per input and parameter, in the order checked
  std::string failing_op;                   ///< from locate_op, when found
  std::string str() const;                  ///< a readable summary
};

/// Checks f's gradients with respect to `inputs` (converted to float64) and, unless options say otherwise,
/// every parameter in `params` (nullptr: none; a float64 store, else it throws) against central differences.
/// f is called on a float64 tape, cleared before every call, once per perturbation: it must be a function of
/// its inputs and the parameters' values only.
GradcheckReport gradcheck(const GradcheckFn& f, std::vector<GradcheckInput>& inputs, ParameterStore* params,
                          const GradcheckOptions& options = {});

}  // namespace matmem
