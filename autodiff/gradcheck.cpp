#include "matmem/autodiff/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem {
namespace {

// One perturbable tensor: an input or a parameter.
struct Target {
  std::string name;
  Tensor* value;
  Parameter* param;  // nullptr for inputs
  int input_index;   // -1 for parameters
};

std::vector<Var> make_inputs(Tape& tape, std::vector<GradcheckInput>& inputs) {
  std::vector<Var> vars;
  vars.reserve(inputs.size());
  for (auto& in : inputs) vars.push_back(tape.input(in.value, in.differentiable));
  return vars;
}

Var run(const GradcheckFn& f, Tape& tape, std::vector<GradcheckInput>& inputs) {
  tape.clear();
  std::vector<Var> vars = make_inputs(tape, inputs);
  return f(tape, vars);
}

void coords(const Shape& s, std::int64_t k, GradcheckMismatch& m) {
  m.j = k % s.cols;
  std::int64_t rest = k / s.cols;
  m.b = rest % s.batch;
  rest /= s.batch;
  m.i = rest % s.rows;
  m.n = rest / s.rows;
}

struct Comparison {
  const GradcheckOptions& opt;
  GradcheckReport& report;
  // Returns true when a and n agree; counts the comparison in the whole report and in `tensor`'s.
  bool operator()(double a, double n, GradcheckTensor& tensor) {
    const double err = std::abs(a - n);
    const double scale = std::max(std::abs(a), std::abs(n));
    // Relative to the larger magnitude, floored at atol/rtol so that near-zero entries (where the test is
    // the absolute one) do not read as 100% errors.
    const double rel = err / std::max(scale, opt.atol / opt.rtol);
    for (double* worst : {&report.max_abs_error, &tensor.max_abs_error}) *worst = std::max(*worst, err);
    for (double* worst : {&report.max_rel_error, &tensor.max_rel_error}) *worst = std::max(*worst, rel);
    const bool ok = err <= opt.atol + opt.rtol * scale && std::isfinite(a) && std::isfinite(n);
    if (!ok) ++tensor.failed;
    return ok;
  }
};

}  // namespace

GradcheckReport gradcheck(const GradcheckFn& f, std::vector<GradcheckInput>& inputs, ParameterStore* params,
                          const GradcheckOptions& opt) {
  for (auto& in : inputs)
    if (in.value.dtype() != DType::f64) in.value = in.value.to(DType::f64);
  if (params && params->dtype() != DType::f64)
    throw Error("gradcheck: parameters must be float64 (make the ParameterStore with DType::f64)");

  std::vector<Target> targets;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].differentiable) targets.push_back({inputs[k].name, &inputs[k].value, nullptr, int(k)});
  if (params && opt.check_parameters)
    for (auto& p : *params) targets.push_back({p->name, &p->value, p.get(), -1});

  Tape tape(DType::f64);
  Var y = run(f, tape, inputs);
  const Shape y_shape = y.shape();
  const std::int64_t ny = y_shape.numel();

  Rng rng(opt.seed);
  Tensor g(DType::f64, y_shape);
  for (std::int64_t k = 0; k < ny; ++k) g.set(k, rng.normal());

  // Analytical gradient of <g, y>, one backward.
  if (params) params->zero_grad();
  tape.backward(y, g);
  std::vector<Tensor> analytical;
  for (auto& t : targets) {
    if (t.param) {
      analytical.push_back(t.param->grad);
    } else {
      // Input leaves are nodes 0..m-1 in creation order (make_inputs).
      analytical.push_back(Var{&tape, std::uint32_t(t.input_index)}.grad_copy());
    }
  }

  GradcheckReport report;
  for (const Target& t : targets) report.tensors.push_back({t.name, t.value->shape()});
  Comparison agree{opt, report};
  auto fail = [&](GradcheckMismatch m) {
    report.passed = false;
    if (int(report.failures.size()) < opt.max_failures_listed) report.failures.push_back(std::move(m));
  };

  // Numerical: perturb every element; keep Jacobian columns when asked.
  std::vector<std::vector<double>> columns;  // per target element, dy/de (full_jacobian only)
  std::vector<double> yp(ny), ym(ny);
  auto output_values = [&](std::vector<double>& out) {
    Var v = run(f, tape, inputs);
    if (v.shape() != y_shape) throw ShapeError("gradcheck: the function's output shape changed between calls");
    const double* d = v.value<double>().data;
    std::copy(d, d + ny, out.begin());
  };
  for (std::size_t t = 0; t < targets.size(); ++t) {
    Tensor& x = *targets[t].value;
    double* xd = x.view<double>().data;
    for (std::int64_t e = 0; e < x.numel(); ++e) {
      const double orig = xd[e];
      xd[e] = orig + opt.step;
      output_values(yp);
      xd[e] = orig - opt.step;
      output_values(ym);
      xd[e] = orig;
      double num = 0;
      for (std::int64_t o = 0; o < ny; ++o) num += g.get(o) * (yp[o] - ym[o]);
      num /= 2 * opt.step;
      const double ana = analytical[t].get(e);
      ++report.elements_checked;
      ++report.tensors[t].elements_checked;
      if (!agree(ana, num, report.tensors[t])) {
        GradcheckMismatch m{targets[t].name, x.shape()};
        coords(x.shape(), e, m);
        m.numerical = num;
        m.analytical = ana;
        fail(m);
      }
      if (opt.full_jacobian) {
        columns.emplace_back(ny);
        for (std::int64_t o = 0; o < ny; ++o) columns.back()[o] = (yp[o] - ym[o]) / (2 * opt.step);
      }
    }
  }

  if (opt.full_jacobian) {
    Tensor onehot(DType::f64, y_shape);
    for (std::int64_t o = 0; o < ny; ++o) {
      Var v = run(f, tape, inputs);
      onehot.fill(0.0);
      onehot.set(o, 1.0);
      if (params) params->zero_grad();
      tape.backward(v, onehot);
      std::size_t col = 0;
      for (std::size_t k = 0; k < targets.size(); ++k) {
        const Target& t = targets[k];
        Tensor row = t.param ? t.param->grad : Var{&tape, std::uint32_t(t.input_index)}.grad_copy();
        for (std::int64_t e = 0; e < row.numel(); ++e, ++col) {
          const double ana = row.get(e), num = columns[col][o];
          if (!agree(ana, num, report.tensors[k])) {
            GradcheckMismatch m{t.name, t.value->shape()};
            coords(t.value->shape(), e, m);
            GradcheckMismatch out;
            coords(y_shape, o, out);
            m.output = fmt::format("output (b={}, n={}, i={}, j={})", out.b, out.n, out.i, out.j);
            m.numerical = num;
            m.analytical = ana;
            fail(m);
          }
        }
      }
    }
  }
  if (params) params->zero_grad();

  if (!report.passed && opt.locate_op) {
    // Check each op alone at the values it saw in this function.
    Var v = run(f, tape, inputs);
    for (std::uint32_t k = 0; k <= v.id; ++k) {
      const Tape::Node& node = tape.node(k);
      if (!node.op || node.output > 0) continue;  // a leaf, or an op's later output (checked with its op)
      std::vector<GradcheckInput> sub;
      for (std::uint32_t in : tape.inputs_of(k)) {
        Tensor copy(DType::f64, tape.node(in).shape);
        std::memcpy(copy.raw(), tape.node(in).value, copy.bytes());
        sub.push_back({fmt::format("input {}", sub.size()), std::move(copy), true});
      }
      const OpDef* op = node.op;
      const OpAttrs attrs = node.attrs;
      const std::int64_t saved = node.saved_count, scratch = node.scratch_count;
      std::vector<Shape> shapes;  // every output's; the check follows output 0
      for (std::uint32_t o = 0; o < node.outputs; ++o) shapes.push_back(tape.node(k + o).shape);
      GradcheckOptions o = opt;
      o.locate_op = false;
      o.full_jacobian = false;
      GradcheckReport r = gradcheck(
          [&](Tape& t, std::span<const Var> xs) {
            std::vector<Var> out(shapes.size());
            t.apply(*op, xs, shapes, out, attrs, saved, scratch);
            return out[0];
          },
          sub, nullptr, o);
      if (!r.passed) {
        report.failing_op = fmt::format("{}: {}", tape.describe(k), r.failures.empty() ? "" : r.str());
        break;
      }
    }
  }
  return report;
}

std::string GradcheckReport::str() const {
  std::string s = fmt::format("{} ({} elements, max abs error {:.3g}, max rel error {:.3g})",
                              passed ? "passed" : "FAILED", elements_checked, max_abs_error, max_rel_error);
  for (const auto& m : failures)
    s += fmt::format("\n  {} {} element (b={}, n={}, i={}, j={}){}: numerical {:.10g}, analytical {:.10g}", m.tensor,
                     m.shape.str(), m.b, m.n, m.i, m.j, m.output.empty() ? "" : " w.r.t. " + m.output, m.numerical,
                     m.analytical);
  if (!failing_op.empty()) s += "\n  first op whose own gradient fails: " + failing_op;
  return s;
}

}  // namespace matmem
