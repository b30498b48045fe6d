#include "matmem/tools/python/tape_bindings.hpp"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "matmem/autodiff/gradcheck.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/ops/registry.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/python/convert.hpp"

namespace matmem::python {

void TapeRef::end_pass(bool clear_tape) {
  if (clear_tape && tape) tape->clear();
  ++generation;
  inputs.clear();
  keep.clear();
}

void TapeRef::retire() {
  end_pass(false);
  tape = nullptr;
}

Tape& TapeRef::get() const {
  if (!tape) throw Error("this tape is gone: it belonged to a call that has returned (gradcheck's tape lives only "
                         "while gradcheck runs)");
  return *tape;
}

Var PyVar::get() const {
  if (!ref || !ref->tape)
    throw Error("this Var's tape is gone: it belonged to a call that has returned (gradcheck's tape lives only "
                "while gradcheck runs)");
  if (generation != ref->generation)
    throw Error("this Var belongs to a tape pass that has ended: the tape was cleared (tape.clear() or the end of "
                "its `with` block) after the Var was made; copy what you need (var.value(), var.grad()) before "
                "clearing");
  return {ref->tape, id};
}

std::shared_ptr<TapeRef> common_tape(const std::string& op, const std::vector<const PyVar*>& vars) {
  std::shared_ptr<TapeRef> ref;
  for (const PyVar* v : vars) {
    if (!v) continue;
    v->get();
    if (!ref) ref = v->ref;
    else if (v->ref != ref) throw Error(op + ": its operands are on different tapes");
  }
  if (!ref) throw Error(op + ": no operand");
  return ref;
}

namespace {

py::array value_of(const PyVar& v) {
  const Var x = v.get();
  return dispatch(x.dtype(), [&](auto z) -> py::array {
    using T = decltype(z);
    return to_array<T>(x.value<T>());
  });
}

py::array grad_of(const PyVar& v) {
  const Var x = v.get();
  return dispatch(x.dtype(), [&](auto z) -> py::array {
    using T = decltype(z);
    return to_array<T>(x.grad<T>());
  });
}

// matmem.no_grad(tape): a context in which the tape records no gradients.
struct PyNoGrad {
  std::shared_ptr<TapeRef> ref;
  bool was = true;
};

GradcheckReport run_gradcheck(const py::function& fn, const py::object& inputs, std::shared_ptr<ParameterStore> params,
                              const py::object& differentiable, const GradcheckOptions& options) {
  std::vector<GradcheckInput> in;
  std::vector<std::string> names;
  std::vector<py::object> arrays;
  if (py::isinstance<py::dict>(inputs)) {
    for (auto [k, a] : py::reinterpret_borrow<py::dict>(inputs)) {
      names.push_back(py::str(k));
      arrays.push_back(py::reinterpret_borrow<py::object>(a));
    }
  } else if (!inputs.is_none()) {
    for (py::handle a : inputs) {
      names.push_back("input " + std::to_string(names.size()));
      arrays.push_back(py::reinterpret_borrow<py::object>(a));
    }
  }
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    GradcheckInput g{names[k], to_tensor(arrays[k], names[k]).to(DType::f64), true};
    if (!differentiable.is_none()) {
      if (py::isinstance<py::dict>(inputs)) {
        g.differentiable = py::bool_(differentiable.attr("__contains__")(names[k]));
      } else {
        g.differentiable = py::cast<std::vector<bool>>(differentiable).at(k);
      }
    }
    in.push_back(std::move(g));
  }
  if (params && params->dtype() != DType::f64)
    throw py::type_error("gradcheck: the parameter store holds float32; gradcheck perturbs float64 parameters "
                         "(make the store with dtype float64)");
  std::shared_ptr<TapeRef> ref;
  auto f = [&](Tape& tape, std::span<const Var> xs) -> Var {
    if (!ref || ref->tape != &tape) {
      if (ref) ref->retire();
      ref = std::make_shared<TapeRef>(&tape);
    } else {
      ref->end_pass(false);  // gradcheck cleared the tape before this call
    }
    py::list args;
    args.append(py::cast(ref));
    for (const Var& x : xs) args.append(py::cast(PyVar::of(ref, x)));
    py::object y = fn(*py::tuple(args));
    PyVar* v = nullptr;
    try {
      v = y.cast<PyVar*>();
    } catch (const py::cast_error&) {
      throw py::type_error("gradcheck: the function must return a matmem.Var, it returned " +
                           std::string(py::str(py::type::of(y).attr("__name__"))));
    }
    const Var out = v->get();
    if (out.tape != &tape) throw Error("gradcheck: the function returned a Var of another tape");
    return out;
  };
  struct Retire {  // the borrowed tape is gone when gradcheck returns, however it returns
    std::shared_ptr<TapeRef>& ref;
    ~Retire() {
      if (ref) ref->retire();
    }
  } retire{ref};
  return gradcheck(f, in, params.get(), options);
}

GradcheckOptions options_from(double step, double atol, double rtol, std::uint64_t seed, bool full_jacobian,
                              bool check_parameters, bool locate_op) {
  GradcheckOptions o;
  o.step = step;
  o.atol = atol;
  o.rtol = rtol;
  o.seed = seed;
  o.full_jacobian = full_jacobian;
  o.check_parameters = check_parameters;
  o.locate_op = locate_op;
  return o;
}

SampleSize sample_size(const std::string& s) {
  if (s == "small") return SampleSize::small;
  if (s == "large") return SampleSize::large;
  if (s == "lanes") return SampleSize::lanes;
  if (s == "paper") return SampleSize::paper;
  throw py::value_error("size: expected small, large, lanes or paper, got " + s);
}

}  // namespace

void bind_tape(py::module_& m) {
  py::class_<TapeRef, std::shared_ptr<TapeRef>>(m, "Tape", R"(A tape recording ops for reverse-mode autodiff.

Tape(dtype=numpy.float32): every value, gradient and parameter on it is of that dtype. Vars made on it are
valid until clear() (or the end of a `with tape:` block), which recycles its memory.)")
      .def(py::init([](const py::object& dtype) { return std::make_shared<TapeRef>(dtype_from_python(dtype)); }),
           py::arg("dtype") = py::dtype::of<float>())
      .def_property_readonly("dtype", [](const TapeRef& t) { return numpy_dtype(t.get().dtype()); })
      .def(
          "input",
          [](const std::shared_ptr<TapeRef>& ref, const py::object& value, bool requires_grad) {
            Tape& tape = ref->get();
            Tensor& t = ref->inputs.emplace_back(to_tensor(value, "input", tape.dtype()));
            return PyVar::of(ref, tape.input(t, requires_grad));
          },
          py::arg("value"), py::arg("requires_grad") = false,
          "A copy of a numpy array [B,r,c] or [B,N,r,c] of the tape's dtype as a leaf; with requires_grad, "
          "backward computes its gradient.")
      .def(
          "constant",
          [](const std::shared_ptr<TapeRef>& ref, const py::object& shape, double fill) {
            return PyVar::of(ref, ref->get().constant(shape_from_tuple(shape, "constant"), fill));
          },
          py::arg("shape"), py::arg("fill") = 0.0, "A value of the given shape, every element `fill`, no gradient.")
      .def(
          "param",
          [](const std::shared_ptr<TapeRef>& ref, const PyParameter& p) {
            Tape& tape = ref->get();
            ref->keep.push_back(p.store);
            return PyVar::of(ref, tape.param(*p.p));
          },
          py::arg("parameter"), "The parameter's leaf on this pass; backward accumulates into parameter.grad.")
      .def(
          "backward",
          [](const std::shared_ptr<TapeRef>& ref, const PyVar& y, const py::object& seed) {
            const Var v = y.get();
            if (v.tape != ref->tape) throw Error("backward: the output belongs to another tape");
            if (seed.is_none()) {
              ref->get().backward(v);
            } else {
              const Tensor s = to_tensor(seed, "seed", v.dtype(), v.shape());
              ref->get().backward(v, s);
            }
          },
          py::arg("y"), py::arg("seed") = py::none(),
          "Reverse pass from y: a one-element y seeded with 1, else the gradients of <seed, y>.")
      .def("clear", [](TapeRef& t) { t.end_pass(true); },
           "Forgets every node and value (every Var of this pass becomes invalid); keeps the memory.")
      .def("__enter__", [](const std::shared_ptr<TapeRef>& ref) { return ref; })
      .def("__exit__", [](TapeRef& t, py::args) { t.end_pass(true); })
      .def("__len__", [](const TapeRef& t) { return t.get().size(); })
      .def_property("retain_grads", [](const TapeRef& t) { return t.get().retain_grads(); },
                    [](TapeRef& t, bool on) { t.get().set_retain_grads(on); })
      .def_property("anomaly_mode", [](const TapeRef& t) { return t.get().anomaly_mode(); },
                    [](TapeRef& t, bool on) { t.get().set_anomaly_mode(on); })
      .def_property_readonly("grad_enabled", [](const TapeRef& t) { return t.get().grad_enabled(); })
      .def("no_grad", [](const std::shared_ptr<TapeRef>& ref) { return PyNoGrad{ref}; },
           "A context in which the tape records values only, no gradients.");

  py::class_<PyNoGrad>(m, "NoGrad")
      .def("__enter__", [](PyNoGrad& g) {
        Tape& t = g.ref->get();
        g.was = t.grad_enabled();
        t.set_grad_enabled(false);
      })
      .def("__exit__", [](PyNoGrad& g, py::args) {
        if (g.ref->tape) g.ref->tape->set_grad_enabled(g.was);
      });

  py::class_<PyVar>(m, "Var", "A value on a tape, valid until the tape is cleared.")
      .def_property_readonly("shape", [](const PyVar& v) { return shape_tuple(v.get().shape()); })
      .def_property_readonly("dtype", [](const PyVar& v) { return numpy_dtype(v.get().dtype()); })
      .def_property_readonly("requires_grad", [](const PyVar& v) { return v.get().requires_grad(); })
      .def_property_readonly("valid", [](const PyVar& v) {
        return v.ref && v.ref->tape && v.generation == v.ref->generation;
      }, "False once its tape was cleared")
      .def_property_readonly("tape", [](const PyVar& v) { v.get(); return v.ref; })
      .def("value", &value_of, "A copy of its value as a numpy array [B,r,c] or [B,N,r,c].")
      .def("grad", &grad_of, "A copy of its gradient after backward (zeros if backward never reached it).")
      .def("item", [](const PyVar& v) { return v.get().item(); }, "The value of a one-element Var, as a float.")
      .def("__repr__", [](const PyVar& v) {
        if (!(v.ref && v.ref->tape && v.generation == v.ref->generation))
          return std::string("<matmem.Var of a cleared tape>");
        const Var x = v.get();
        return "<matmem.Var " + x.shape().str() + " " + std::string(name_of(x.dtype())) + ">";
      });

  py::class_<PyParameter>(m, "Parameter", "A named learned tensor of a ParameterStore.")
      .def_property_readonly("name", [](const PyParameter& p) { return p.p->name; })
      .def_property_readonly("shape", [](const PyParameter& p) { return shape_tuple(p.p->value.shape()); })
      .def_property(
          "value", [](const PyParameter& p) { return to_array(p.p->value); },
          [](PyParameter& p, const py::object& a) {
            p.p->value = to_tensor(a, "parameter " + p.p->name, p.p->value.dtype(), p.p->value.shape());
          },
          "A copy of its value; assigning an array of its shape and dtype sets it.")
      .def_property_readonly("grad", [](const PyParameter& p) { return to_array(p.p->grad); },
                             "A copy of its accumulated gradient.")
      .def("__repr__", [](const PyParameter& p) {
        return "<matmem.Parameter " + p.p->name + " " + p.p->value.shape().str() + ">";
      });

  py::class_<ParameterStore, std::shared_ptr<ParameterStore>>(m, "ParameterStore",
                                                               "Named parameters, in creation order.")
      .def(py::init([](const py::object& dtype) { return std::make_shared<ParameterStore>(dtype_from_python(dtype)); }),
           py::arg("dtype") = py::dtype::of<float>())
      .def_property_readonly("dtype", [](const ParameterStore& s) { return numpy_dtype(s.dtype()); })
      .def(
          "add",
          [](const std::shared_ptr<ParameterStore>& s, const std::string& name, const py::object& init) {
            Parameter* p = nullptr;
            if (py::isinstance<py::array>(init)) {
              Tensor value = to_tensor(init, "parameter " + name, s->dtype());
              p = &s->add(name, value.shape());
              p->value = std::move(value);
            } else {
              p = &s->add(name, shape_from_tuple(init, "parameter " + name));
            }
            return PyParameter{s, p};
          },
          py::arg("name"), py::arg("value_or_shape"),
          "A new parameter: a copy of an array of the store's dtype, or zeros of a shape (B,r,c) / (B,N,r,c).")
      .def("__getitem__", [](const std::shared_ptr<ParameterStore>& s, const std::string& name) {
        Parameter* p = s->find(name);
        if (!p) throw py::key_error("no parameter named " + name);
        return PyParameter{s, p};
      })
      .def("__contains__", [](const ParameterStore& s, const std::string& name) { return s.contains(name); })
      .def("__len__", &ParameterStore::size)
      .def("names", [](const ParameterStore& s) {
        std::vector<std::string> n;
        for (const auto& p : s) n.push_back(p->name);
        return n;
      })
      .def("zero_grad", &ParameterStore::zero_grad);

  py::class_<GradcheckReport>(m, "GradcheckReport", "What gradcheck found.")
      .def_readonly("passed", &GradcheckReport::passed)
      .def_readonly("max_abs_error", &GradcheckReport::max_abs_error)
      .def_readonly("max_rel_error", &GradcheckReport::max_rel_error)
      .def_readonly("elements_checked", &GradcheckReport::elements_checked)
      .def_readonly("failing_op", &GradcheckReport::failing_op)
      .def_property_readonly("failures", [](const GradcheckReport& r) {
        py::list out;
        for (const GradcheckMismatch& f : r.failures)
          out.append(py::dict(py::arg("tensor") = f.tensor, py::arg("element") = py::make_tuple(f.b, f.n, f.i, f.j),
                              py::arg("output") = f.output, py::arg("numerical") = f.numerical,
                              py::arg("analytical") = f.analytical));
        return out;
      })
      .def("__bool__", [](const GradcheckReport& r) { return r.passed; })
      .def("__str__", &GradcheckReport::str)
      .def("__repr__", [](const GradcheckReport& r) { return "<matmem.GradcheckReport " + r.str() + ">"; });

  m.def(
      "gradcheck",
      [](const py::function& fn, const py::object& inputs, std::shared_ptr<ParameterStore> params,
         const py::object& differentiable, double step, double atol, double rtol, std::uint64_t seed,
         bool full_jacobian, bool check_parameters, bool locate_op) {
        return run_gradcheck(fn, inputs, std::move(params), differentiable,
                             options_from(step, atol, rtol, seed, full_jacobian, check_parameters, locate_op));
      },
      py::arg("fn"), py::arg("inputs") = py::none(), py::arg("params") = nullptr,
      py::arg("differentiable") = py::none(), py::kw_only(), py::arg("step") = 1e-6, py::arg("atol") = 1e-6,
      py::arg("rtol") = 1e-5, py::arg("seed") = 1, py::arg("full_jacobian") = false,
      py::arg("check_parameters") = true, py::arg("locate_op") = true,
      R"(Checks fn's gradients against central differences in float64 (autodiff/gradcheck.hpp).

fn(tape, *vars) records y on the float64 tape it is given (one Var per input, in order) and returns y;
inputs: a list of arrays or a dict name -> array (converted to float64); params: a float64 ParameterStore
whose parameters are perturbed too; differentiable: a list of bools (or, for a dict, the names) of the inputs
whose gradients are checked (default: all). Returns a GradcheckReport (truthy when passed).)");

  m.def("op_names", [] {
    std::vector<std::string> n;
    for (const OpEntry& e : op_registry()) n.push_back(e.name);
    return n;
  }, "Every registered op's name: the built-in ones, then those registered later (C++ plugins, register_op).");
  m.def(
      "gradcheck_op",
      [](const std::string& name, const std::string& size, std::uint64_t seed) {
        const OpEntry* e = find_op(name);
        if (!e) throw py::key_error("no registered op named " + name);
        return gradcheck_op(*e, sample_size(size), seed);
      },
      py::arg("name"), py::arg("size") = "small", py::arg("seed") = 1234,
      "gradcheck of a registered op on its sample inputs, as `matmem gradcheck --op NAME` (full Jacobian at "
      "size small).");
}

}  // namespace matmem::python
