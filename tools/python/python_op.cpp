#include "matmem/tools/python/python_op.hpp"

#include <vector>

#include <pybind11/stl.h>

#include "matmem/autodiff/op.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/tools/python/bindings.hpp"
#include "matmem/tools/python/convert.hpp"

namespace matmem::python {

// The Python exception, released with the GIL held whichever thread drops the last reference.
struct PythonError::Held {
  py::object type, value, trace;
  ~Held() {
    if (!Py_IsInitialized()) {  // at exit: leak rather than touch a finalised interpreter
      (void)type.release();
      (void)value.release();
      (void)trace.release();
      return;
    }
    py::gil_scoped_acquire gil;
    type = py::object();
    value = py::object();
    trace = py::object();
  }
};

namespace {
std::string describe(py::error_already_set& e) {
  return std::string(py::str(e.type().attr("__name__"))) + ": " + std::string(py::str(e.value()));
}
}  // namespace

PythonError::PythonError(const std::string& where, py::error_already_set& e)
    : Error(where + " raised " + describe(e)), held_(std::make_shared<Held>()) {
  held_->type = e.type();
  held_->value = e.value();
  held_->trace = e.trace();
}

void PythonError::restore() const {
  PyErr_Restore(held_->type.inc_ref().ptr(), held_->value.inc_ref().ptr(), held_->trace.inc_ref().ptr());
}

namespace {

// An op written in Python: its functions and its own OpDef (named as the op). Never freed: the OpDef may be
// on a tape, or in the registry, until the process ends.
struct PythonOp {
  std::string name;
  py::object forward, backward, output_shape;
  std::vector<Shape> sample_shapes;
  double lo = -1, hi = 1;
  OpDef def{};
};

std::vector<PythonOp*>& python_ops() {
  static auto* ops = new std::vector<PythonOp*>;
  return *ops;
}

const PythonOp& python_op(std::int64_t index) { return *python_ops().at(std::size_t(index)); }

template <class T>
py::tuple input_arrays(const OpCall<T>& c) {
  py::tuple xs(c.arity);
  for (int k = 0; k < c.arity; ++k) xs[std::size_t(k)] = to_array<T>(c.in(k));
  return xs;
}

// forward(*xs) -> y;  backward(*xs, y, grad_y) -> one gradient per input (None: no gradient).
template <class T>
struct PythonKernel {
  static void forward(const OpCall<T>& c) {
    py::gil_scoped_acquire gil;
    const PythonOp& op = python_op(c.attrs.i[0]);
    try {
      py::object y = op.forward(*input_arrays(c));
      copy_into<T>(y, c.out(), "op " + op.name + ": its forward's result");
    } catch (py::error_already_set& e) {
      throw PythonError("op " + op.name + ": its forward", e);
    }
  }

  static void backward(const OpCall<T>& c) {
    py::gil_scoped_acquire gil;
    const PythonOp& op = python_op(c.attrs.i[0]);
    try {
      py::tuple args(c.arity + 2);
      const py::tuple xs = input_arrays(c);
      for (int k = 0; k < c.arity; ++k) args[std::size_t(k)] = xs[std::size_t(k)];
      args[std::size_t(c.arity)] = to_array<T>(TensorView<const T>{c.y, c.y_shape});
      args[std::size_t(c.arity) + 1] = to_array<T>(TensorView<const T>{c.grad_y, c.y_shape});
      py::object g = op.backward(*args);
      py::tuple grads;
      if (c.arity == 1 && !py::isinstance<py::tuple>(g) && !py::isinstance<py::list>(g))
        grads = py::make_tuple(g);
      else if (py::isinstance<py::tuple>(g) || py::isinstance<py::list>(g))
        grads = py::tuple(g);
      if (grads.size() != std::size_t(c.arity))
        throw py::value_error("op " + op.name + ": its backward must return " + std::to_string(c.arity) +
                              " gradients (a tuple, None for an input without one), got " +
                              std::string(py::str(py::repr(g))));
      std::vector<T> tmp;
      for (int k = 0; k < c.arity; ++k) {
        if (!c.grad_x[k] || grads[std::size_t(k)].is_none()) continue;
        const Shape& s = c.x_shape[k];
        tmp.assign(std::size_t(s.numel()), T(0));
        copy_into<T>(grads[std::size_t(k)], TensorView<T>{tmp.data(), s},
                     "op " + op.name + ": its backward's gradient " + std::to_string(k));
        T* gx = c.grad_x[k];
        for (std::int64_t e = 0; e < s.numel(); ++e) gx[e] += tmp[std::size_t(e)];
      }
    } catch (py::error_already_set& e) {
      throw PythonError("op " + op.name + ": its backward", e);
    }
  }
};

Shape output_shape(const PythonOp& op, std::span<const Var> inputs) {
  if (op.output_shape.is_none()) return inputs[0].shape();
  py::tuple shapes(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) shapes[k] = shape_tuple(inputs[k].shape());
  try {
    return shape_from_tuple(op.output_shape(*shapes), "op " + op.name + ": its output_shape's result");
  } catch (py::error_already_set& e) {
    throw PythonError("op " + op.name + ": its output_shape", e);
  }
}

// The Python front-end of a registered Python op: op(*vars) -> Var.
struct PyOpFunction {
  std::int64_t index;
};

}  // namespace

Var apply_python_op(std::int64_t index, Tape& tape, std::span<const Var> inputs) {
  py::gil_scoped_acquire gil;
  const PythonOp& op = python_op(index);
  if (inputs.empty()) throw Error("op " + op.name + ": takes at least one Var");
  OpAttrs attrs;
  attrs.i[0] = index;
  return tape.apply(op.def, inputs, output_shape(op, inputs), attrs);
}

void bind_python_op(py::module_& m) {
  py::class_<PyOpFunction>(m, "PythonOp", "An op written in Python, made by register_op: call it on Vars.")
      .def_property_readonly("name", [](const PyOpFunction& f) { return python_op(f.index).name; })
      .def("__call__", [](const PyOpFunction& f, py::args args) {
        std::vector<PyVar> vars;
        for (py::handle a : args) {
          try {
            vars.push_back(a.cast<PyVar>());
          } catch (const py::cast_error&) {
            throw py::type_error("op " + python_op(f.index).name + ": expected matmem.Var operands, got " +
                                 std::string(py::str(py::type::of(a).attr("__name__"))));
          }
        }
        if (vars.empty()) throw Error("op " + python_op(f.index).name + ": takes at least one Var");
        std::vector<const PyVar*> ptrs;
        for (const PyVar& v : vars) ptrs.push_back(&v);
        const std::shared_ptr<TapeRef> ref = common_tape("op " + python_op(f.index).name, ptrs);
        std::vector<Var> xs;
        for (const PyVar& v : vars) xs.push_back(v.get());
        return PyVar::of(ref, apply_python_op(f.index, ref->get(), xs));
      })
      .def("__repr__", [](const PyOpFunction& f) { return "<matmem.PythonOp " + python_op(f.index).name + ">"; });

  m.def(
      "register_op",
      [](const std::string& name, py::function forward, py::function backward, py::object output_shape,
         const std::vector<py::object>& sample_shapes, std::pair<double, double> sample_range, double atol,
         double rtol) {
        if (find_op(name)) throw Error("an op named " + name + " is already registered");
        if (sample_shapes.empty())
          throw py::value_error("register_op " + name + ": sample_shapes must list the shape of each input of a "
                                "sample call (gradcheck_op and `gradcheck --all` draw them)");
        auto* op = new PythonOp;  // never freed (see PythonOp)
        op->name = name;
        op->forward = std::move(forward);
        op->backward = std::move(backward);
        op->output_shape = std::move(output_shape);
        for (const py::object& s : sample_shapes)
          op->sample_shapes.push_back(shape_from_tuple(s, "register_op " + name + ": sample shape"));
        op->lo = sample_range.first;
        op->hi = sample_range.second;
        op->def = make_op<PythonKernel>(op->name.c_str());
        const std::int64_t index = std::int64_t(python_ops().size());
        python_ops().push_back(op);
        OpEntry entry;
        entry.name = name;
        entry.atol = atol;
        entry.rtol = rtol;
        entry.sample = [index](Rng& rng, SampleSize) {
          const PythonOp& p = python_op(index);
          OpSample s;
          for (std::size_t k = 0; k < p.sample_shapes.size(); ++k)
            s.inputs.push_back({"x" + std::to_string(k), random_tensor(rng, p.sample_shapes[k], p.lo, p.hi)});
          s.apply = [index](Tape& tape, std::span<const Var> in) { return apply_python_op(index, tape, in); };
          return s;
        };
        register_op(std::move(entry));
        return PyOpFunction{index};
      },
      py::arg("name"), py::arg("forward"), py::arg("backward"), py::kw_only(), py::arg("output_shape") = py::none(),
      py::arg("sample_shapes"), py::arg("sample_range") = std::pair<double, double>(-1.0, 1.0),
      py::arg("atol") = 0.0, py::arg("rtol") = 0.0,
      R"(Registers an op written in Python and returns its front-end, op(*vars) -> Var.

forward(*xs) -> y and backward(*xs, y, grad_y) -> (grad_x0, grad_x1, ...) (None for an input without a
gradient; a single array for one input) work on numpy arrays of the tape's dtype, [B,r,c] or [B,N,r,c]
(copies); output_shape(*shapes) -> shape gives the output's shape (default: the first input's).
sample_shapes: one shape per input, for the registry's sample inputs (uniform in sample_range), with which
gradcheck_op(name) checks it; atol, rtol: its gradcheck tolerances (0: defaults).)");
}

}  // namespace matmem::python
