/// @file
/// A whole model gradient-checked: unrolled over a short sequence in float64, every parameter (its learned
/// starts, `<model>/init/<state>`, included) checked against central differences (autodiff/gradcheck.hpp) at
/// a point moved off the initialisation.
///
/// At initialisation some paths are all but closed (a zero initial state, a uniform memory that makes content
/// addressing flat), so a gradient through them is tiny and a check of it would pass whatever the backward
/// computed: gradcheck_model() first adds N(0, σ²) noise to every parameter. And since gradcheck passes a
/// gradient of 1e-6 computed as 0 (within its atol), it also measures each parameter's largest |dL/dθ|: one
/// below kNegligibleGradient·|L| is reported as negligible, for the caller to exempt by name (`flat`) with its
/// reason, or to fail on.
///
///     MatNTM m(config, DType::f64, seed);
///     ModelGradcheckReport r = gradcheck_model(m, random_sequence(m, 2, 3, 99));
///     if (!r.passed) std::puts(r.str().c_str());  // names the parameter, the element and the first failing op
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/models/core/model.hpp"
#include "matmem/models/tasks/tasks.hpp"

namespace matmem {

/// The smallest largest-element |dL/dθ| a parameter must have, as a fraction of |L|, for its check to say
/// something: ten times gradcheck's atol for a loss near 1 (a dropped gradient path that leaves a parameter's
/// gradient smaller would go unseen).
inline constexpr double kNegligibleGradient = 1e-5;

/// How gradcheck_model() checks a model.
struct ModelGradcheckOptions {
  double sigma = 0.3;  ///< σ of the N(0, σ²) noise added to every parameter first; 0: checked where they are
  std::uint64_t seed = 5;  ///< of that noise
  /// Prefixes of parameter names whose gradient the caller knows to be negligible at this point (and says
  /// why): not reported as negligible. Each must begin some parameter's name, else gradcheck_model() throws.
  std::vector<std::string> flat;
  /// Whether a negligible gradient (outside `flat`) fails the check: true for a sequence that reaches every
  /// parameter (random_sequence()); false for a task's batch, whose zero input rows may leave some unreached.
  bool require_gradient = true;
  GradcheckOptions gradcheck;  ///< step and tolerances; its check_parameters must stay true
};

/// One parameter's largest gradient at the checked point.
struct ParameterGradient {
  std::string name;  ///< the parameter
  double largest = 0;  ///< largest |dL/dθ| over its elements
  bool negligible = false;  ///< largest < kNegligibleGradient · |L|
  bool flat = false;  ///< named by ModelGradcheckOptions::flat
};

/// An op kind on the model's tape, checked alone with its registry sample applied twice (gradcheck_op with
/// Uses::twice, ops/registry.hpp): a backward that assigns its gradient instead of adding to it passes
/// alone, fails there, and fails the model wherever one of its inputs has two uses.
struct OpTwiceCheck {
  std::string op;           ///< the op's name
  bool registered = false;  ///< false: not in the op registry (no sample inputs), so not checked alone
  GradcheckReport report;   ///< when registered
};

/// What gradcheck_model() found: the gradcheck of every parameter (GradcheckReport::tensors, in the order
/// of the model's ParameterStore), with the loss and each parameter's largest gradient, and every op kind on
/// its tape checked applied twice. `passed` is false when a gradient disagrees, when an op fails applied
/// twice, or, with `require_gradient`, when a gradient outside `flat` is negligible.
struct ModelGradcheckReport : GradcheckReport {
  double loss = 0;  ///< L at the checked point
  std::vector<ParameterGradient> gradients;  ///< per parameter, in the store's order
  std::vector<OpTwiceCheck> ops_applied_twice;  ///< per op kind on the tape, in order of first use
  /// The parameters (outside `flat`) whose gradient is negligible.
  std::vector<std::string> negligible() const;
  /// GradcheckReport::str() and the negligible gradients.
  std::string str() const;
};

/// A random sequence of `steps` frames [batch, input_rows, input_cols] of `model`, uniform in [-1, 1], with
/// binary targets (TargetKind::bits) at every step after the first: a sequence that reaches every parameter.
Sequence random_sequence(const Model& model, std::int64_t batch, int steps, std::uint64_t seed = 99);

/// A batch of `task` in float64 for a gradient check: drawn from `rng` at the task's smallest size (its
/// size_range()'s first, when it has sizes), cut to its last `steps` time steps (all of them when it has
/// fewer), with the targets, lane masks and graph that fall in them; the model starts those steps from its
/// initial states. Throws Error naming the task and the steps when no target falls in them.
Sequence task_sequence(const Task& task, int steps, Rng& rng);

/// Adds N(0, σ²) noise to every element of every parameter of `model` (built first if need be).
void perturb_parameters(Model& model, double sigma, std::uint64_t seed);

/// Gradient-checks `model` (float64 parameters, else Error) unrolled over `seq`, its loss the function
/// checked: builds it if need be, moves its parameters off their values (ModelGradcheckOptions::sigma; they
/// stay moved), measures each parameter's largest gradient, then runs gradcheck() over every parameter,
/// naming the first op whose own gradient fails when one does (GradcheckOptions::locate_op); and checks every
/// op kind on the tape applied twice to its registry sample (each op once a process). Costs two unrolls per
/// parameter element.
ModelGradcheckReport gradcheck_model(Model& model, const Sequence& seq, const ModelGradcheckOptions& options = {});

}  // namespace matmem
