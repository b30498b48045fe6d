#include "matmem/tools/python/model_bindings.hpp"

#include <new>
#include <optional>
#include <vector>

#include <pybind11/stl.h>

#include "matmem/models/capacity/capacity.hpp"
#include "matmem/models/registry.hpp"
#include "matmem/models/training/config.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/tools/python/convert.hpp"
#include "matmem/tools/python/python_op.hpp"
#include "matmem/tools/python/tape_bindings.hpp"

namespace matmem::python {

std::shared_ptr<ParameterStore> params_of(Model& model, py::object owner) {
  auto* held = new py::object(std::move(owner));
  std::shared_ptr<void> keep(held, [](py::object* o) {
    if (!Py_IsInitialized()) {
      (void)o->release();
    } else {
      py::gil_scoped_acquire gil;
      delete o;
      return;
    }
    delete o;
  });
  return std::shared_ptr<ParameterStore>(keep, &model.params());
}

namespace {

// A Step as Python sees it during one call of a Python model's step(): the step and the TapeRef its Vars use.
struct PyStep {
  Step* step = nullptr;
  std::shared_ptr<TapeRef> ref;
  Step& get() const {
    if (!step) throw Error("this Step is over: a Step is valid only during the model's step() call");
    return *step;
  }
  PyVar wrap(Var v) const { return PyVar::of(ref, v); }
  Var var(const PyVar& v, const char* what) const {
    const Var x = v.get();
    if (v.ref != ref) throw Error(std::string("Step.") + what + ": the Var belongs to another tape than the step's");
    return x;
  }
};

// Step.link(name) as a context manager: the ChainLink scope of Step::link.
struct PyLink {
  PyStep* step;
  std::string name;
  alignas(ChainLink) unsigned char storage[sizeof(ChainLink)];
  bool active = false;
};

// The trampoline of Python subclasses of Model (see the file).
class PyModel : public Model {
 public:
  using Model::Model;
  using Model::declare_state;
  using Model::set_io;
  ~PyModel() override {
    if (self_) {
      if (!Py_IsInitialized()) {
        (void)self_.release();
      } else {
        py::gil_scoped_acquire gil;
        self_ = py::object();
      }
    }
  }

  void step(Step& s) override {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const Model*>(this), "step");
    if (!f) throw Error("model " + name() + ": step() is not defined (a subclass of matmem.Model overrides it)");
    std::shared_ptr<TapeRef> ref = caller_ref_;
    if (!ref) {
      if (!ref_ || ref_->tape != &s.tape() || s.time() == 0) {  // a new pass (the Unroller cleared the tape)
        if (ref_) ref_->retire();
        ref_ = std::make_shared<TapeRef>(&s.tape());
      }
      ref = ref_;
    }
    PyStep ps{&s, ref};
    py::object arg = py::cast(&ps, py::return_value_policy::reference);
    struct End {
      PyStep& ps;
      ~End() { ps.step = nullptr; }
    } end{ps};
    try {
      f(arg);
    } catch (py::error_already_set& e) {
      throw PythonError("model " + name() + ": its step", e);
    }
  }

  py::object self_;                     // set when C++ owns this model: keeps its Python object alive
  std::shared_ptr<TapeRef> caller_ref_;  // run_steps: the caller's tape
 private:
  std::shared_ptr<TapeRef> ref_;
};

// A C++ model made from a Python object: the Python object gives up ownership (see the file).
std::unique_ptr<Model> take_model(py::object obj, const std::string& what) {
  if (!py::isinstance<Model>(obj))
    throw py::type_error(what + ": expected a matmem.Model, got " + std::string(py::str(py::type::of(obj))));
  auto* inst = reinterpret_cast<py::detail::instance*>(obj.ptr());
  auto vh = inst->get_value_and_holder(py::detail::get_type_info(typeid(Model)));
  if (!vh.holder_constructed() || !inst->owned)
    throw Error(what + ": the model is owned elsewhere already (a factory must return a new model each call)");
  Model* m = vh.template holder<std::unique_ptr<Model>>().release();
  vh.template holder<std::unique_ptr<Model>>().~unique_ptr();
  vh.set_holder_constructed(false);
  inst->owned = false;
  if (auto* pm = dynamic_cast<PyModel*>(m)) pm->self_ = obj;
  return std::unique_ptr<Model>(m);
}

StateDecl::Start start_of(const std::string& s) {
  if (s == "zero") return StateDecl::zero;
  if (s == "constant") return StateDecl::constant;
  if (s == "learned") return StateDecl::learned;
  if (s == "given") return StateDecl::given;
  throw py::value_error("declare_state: start is zero, constant, learned or given, not " + s);
}

capacity::Matrix matrix_of(const py::array_t<double, py::array::c_style | py::array::forcecast>& a,
                           const char* what) {
  if (a.ndim() != 2) throw py::value_error(std::string("capacity: ") + what + " must be a 2-d array");
  capacity::Matrix m(std::size_t(a.shape(0)), std::size_t(a.shape(1)));
  std::copy(a.data(), a.data() + a.size(), m.data.begin());
  return m;
}

py::dict curve_dict(const capacity::MemoryCurve& c) {
  py::dict d;
  d["j"] = py::array_t<double>(py::ssize_t(c.j.size()), c.j.data());
  d["total"] = c.total;
  d["input_information"] = c.input_information;
  d["relative"] = c.relative();
  return d;
}

}  // namespace

void bind_models(py::module_& m) {
  py::class_<Init>(m, "Init", "How a parameter starts: Init.glorot(), constant(v), normal(mean, stddev), identity(s).")
      .def_static("glorot", &Init::Glorot)
      .def_static("constant", &Init::Constant, py::arg("value"))
      .def_static("normal", &Init::Normal, py::arg("mean"), py::arg("stddev"))
      .def_static("identity", &Init::Identity, py::arg("scale"))
      .def_readonly("a", &Init::a)
      .def_readonly("b", &Init::b);

  py::class_<Model, PyModel>(m, "Model", R"(A model written as one time step (models/core/model.hpp).

Subclass it: __init__ calls super().__init__(name, dtype, seed), set_io(in_rows, in_cols, out_rows, out_cols)
and declare_state(...) for each recurrent state; step(s) reads s.input() and s.state(name), sets s.next(name, v)
and s.output(logits). Parameters are made on the first (build) pass by s.mat(...) / s.parameter(...).)")
      .def(py::init([](const std::string& name, const py::object& dtype, std::uint64_t seed) {
             return std::make_unique<PyModel>(name, dtype_from_python(dtype), seed);
           }),
           py::arg("name"), py::arg("dtype") = py::dtype::of<float>(), py::arg("seed") = 1)
      .def_property_readonly("name", &Model::name)
      .def_property_readonly("dtype", [](const Model& x) { return numpy_dtype(x.dtype()); })
      .def_property_readonly("input_shape", [](const Model& x) { return py::make_tuple(x.input_rows(), x.input_cols()); })
      .def_property_readonly("output_shape",
                             [](const Model& x) { return py::make_tuple(x.output_rows(), x.output_cols()); })
      .def_property_readonly("states", [](const Model& x) {
        py::list out;
        for (const StateDecl& d : x.states()) out.append(py::make_tuple(d.name, shape_tuple(d.shape)));
        return out;
      }, "(name, per-sample shape) of each state, in declaration order")
      .def_property_readonly("params", [](py::object self) { return params_of(self.cast<Model&>(), self); },
                             "Its ParameterStore (after build()); keeps the model alive")
      .def("build", &Model::build, "Creates every parameter by one step on a batch of one.")
      .def_property_readonly("built", &Model::built)
      .def("set_io", [](Model& x, std::int64_t ir, std::int64_t ic, std::int64_t orr, std::int64_t oc) {
             auto* p = dynamic_cast<PyModel*>(&x);
             if (!p) throw Error("set_io: only a model defined in Python sets its sizes");
             p->set_io(ir, ic, orr, oc);
           },
           py::arg("input_rows"), py::arg("input_cols"), py::arg("output_rows"), py::arg("output_cols"))
      .def("declare_state",
           [](Model& x, const std::string& name, const py::object& shape, const std::string& start, double value,
              const Init& learned_init, const py::object& initial, int segment) {
             auto* p = dynamic_cast<PyModel*>(&x);
             if (!p) throw Error("declare_state: only a model defined in Python declares states");
             StateDecl d{name, shape_from_tuple(shape, "state " + name), start_of(start), value, learned_init};
             if (!initial.is_none()) d.initial = to_tensor(initial, "state " + name + " initial", x.dtype());
             d.segment = segment;
             p->declare_state(std::move(d));
           },
           py::arg("name"), py::arg("shape"), py::arg("start") = "zero", py::arg("value") = 0.0,
           py::arg("learned_init") = Init::Normal(0, 0.01), py::arg("initial") = py::none(), py::arg("segment") = 1,
           "A recurrent state: per-sample shape (1,r,c) or (1,N,r,c); start zero | constant (value) | learned "
           "(parameter <model>/init/<name>, learned_init) | given (initial, an array of that shape).")
      .def("learned_scalars", &Model::learned_scalars);

  py::class_<PyStep>(m, "Step", "What a model's step() works with; valid during the call only.")
      .def_property_readonly("batch", [](const PyStep& s) { return s.get().batch(); })
      .def_property_readonly("time", [](const PyStep& s) { return s.get().time(); })
      .def_property_readonly("tape", [](const PyStep& s) { s.get(); return s.ref; })
      .def_property_readonly("output_needed", [](const PyStep& s) { return s.get().output_needed(); })
      .def("input", [](const PyStep& s) { return s.wrap(s.get().input()); }, "This time step's input [B,r,c].")
      .def("state", [](const PyStep& s, std::string_view name) { return s.wrap(s.get().state(name)); },
           py::arg("name"))
      .def("next", [](const PyStep& s, std::string_view name, const PyVar& v) { s.get().next(name, s.var(v, "next")); },
           py::arg("name"), py::arg("value"))
      .def("output", [](const PyStep& s, const PyVar& v) { s.get().output(s.var(v, "output")); }, py::arg("logits"))
      .def("parameter",
           [](const PyStep& s, std::string_view path, std::string_view term, std::string_view leaf,
              const py::object& shape, const Init& init) {
             return s.wrap(s.get().parameter(path, term, leaf, shape_from_tuple(shape, "parameter"), init));
           },
           py::arg("path"), py::arg("term"), py::arg("leaf"), py::arg("shape"), py::arg("init") = Init::Glorot())
      .def("mat",
           [](const PyStep& s, std::string_view path, const std::vector<std::pair<std::string, PyVar>>& terms,
              std::int64_t rows, std::int64_t cols, double bias) {
             Step& st = s.get();
             std::vector<NamedTerm> t;
             t.reserve(terms.size());
             for (const auto& [name, v] : terms) t.push_back({name, s.var(v, "mat")});
             return s.wrap(st.mat(path, std::span<const NamedTerm>(t), rows, cols, bias));
           },
           py::arg("path"), py::arg("terms"), py::arg("rows"), py::arg("cols"), py::arg("bias") = 0.0,
           "Σ_t U_tᵀ x_t V_t + B over terms [(name, x), ...]: parameters <path>/<name>/U, V and <path>/B.")
      .def("projections",
           [](const PyStep& s, const std::string& term, const PyVar& x,
              const std::vector<std::tuple<std::string, std::int64_t, std::int64_t, double>>& specs) {
             Step& st = s.get();
             std::vector<ProjectionSpec> p;
             p.reserve(specs.size());
             for (const auto& [path, r, c, b] : specs) p.push_back({path, r, c, b});
             std::vector<Var> out(p.size());
             st.projections({term, s.var(x, "projections")}, p, out);
             py::list res;
             for (const Var& v : out) res.append(s.wrap(v));
             return res;
           },
           py::arg("term"), py::arg("x"), py::arg("specs"),
           "[mat(path, [(term, x)], rows, cols, bias) for (path, rows, cols, bias) in specs], one fused op.")
      .def("link", [](PyStep& s, const std::string& name) { return PyLink{&s, name}; }, py::arg("name"),
           "A context: the op recorded inside writes state `name` as a link of its recomputed chain.")
      .def("expose", [](const PyStep&, const std::string&, const PyVar&) {}, "Observers are not run from Python.");

  py::class_<PyLink>(m, "ChainLink")
      .def("__enter__", [](PyLink& l) {
        if (l.active) throw Error("Step.link: already entered");
        ::new (l.storage) ChainLink(l.step->get().link(l.name));
        l.active = true;
      })
      .def("__exit__", [](PyLink& l, py::args) {
        if (l.active) std::launder(reinterpret_cast<ChainLink*>(l.storage))->~ChainLink();
        l.active = false;
      });

  m.def("run_steps",
        [](Model& model, const std::shared_ptr<TapeRef>& tape, const std::vector<PyVar>& inputs) {
          Tape& t = tape->get();
          if (t.dtype() != model.dtype()) throw Error("run_steps: the tape's dtype is not the model's");
          model.build();
          auto* pm = dynamic_cast<PyModel*>(&model);
          if (pm) pm->caller_ref_ = tape;
          struct Reset {
            PyModel* pm;
            ~Reset() {
              if (pm) pm->caller_ref_.reset();
            }
          } reset{pm};
          if (inputs.empty()) throw Error("run_steps: no input frames");
          Step s(model, t);
          s.begin_sequence(inputs[0].get().shape().batch);
          py::list out;
          for (std::size_t k = 0; k < inputs.size(); ++k) {
            if (inputs[k].ref != tape) throw Error("run_steps: input frame on another tape");
            s.begin_step(std::int64_t(k), inputs[k].get(), true);
            model.step(s);
            if (!s.last_output().valid()) throw Error("model " + model.name() + ": step() set no output");
            out.append(PyVar::of(tape, s.last_output()));
            s.end_step();
          }
          return out;
        },
        py::arg("model"), py::arg("tape"), py::arg("inputs"),
        "Unrolls `model` over the input frames (Vars [B,r,c] on `tape`, one per time step) from its initial states; "
        "returns the output logits of every step. Builds the model first if need be.");

  m.def("register_model",
        [](const std::string& name, const py::function& factory) {
          // Never released: the registry lives until the process ends.
          PyObject* f = factory.inc_ref().ptr();
          register_model(name, [f, name](const Config& config, const Task& task, DType dtype, std::uint64_t seed) {
            py::gil_scoped_acquire gil;
            py::object obj;
            try {
              obj = py::reinterpret_borrow<py::function>(f)(
                  py::cast(config), py::cast(&task, py::return_value_policy::reference), numpy_dtype(dtype), seed);
            } catch (py::error_already_set& e) {
              throw PythonError("model " + name + ": its factory", e);
            }
            return take_model(obj, "model " + name + ": the factory's result");
          });
        },
        py::arg("name"), py::arg("factory"),
        "Registers model `name` for Trainer and make_model: factory(config, task, dtype, seed) returns a new "
        "matmem.Model (a Python subclass or a bundled model); `task` gives the frame sizes.");
  m.def("register_config_key",
        [](const std::string& key, const py::object& default_value, const std::string& doc) {
          const std::string text = py::str(py::module_::import("json").attr("dumps")(default_value));
          register_config_key({key, text, doc});
        },
        py::arg("key"), py::arg("default"), py::arg("doc"),
        "Adds a config key (a Python model's own, e.g. mymodel.size) with its default (a bool, number or "
        "string) and one line of documentation; Config and Trainer accept it afterwards.");
  m.def("model_names", &model_names, "Every registered model's name.");
  m.def("task_names", &task_names, "Every task's name.");
  m.def("make_model",
        [](const Config& config, const py::object& dtype) {
          std::unique_ptr<Task> task = make_task(config);
          return make_model(config, *task, dtype_from_python(dtype));
        },
        py::arg("config"), py::arg("dtype") = py::dtype::of<float>(),
        "The model the config's `model` key names, for its task, seeded with its seed.");

  py::class_<Task>(m, "Task", "A task's sizes (valid during a model factory's call).")
      .def_property_readonly("name", [](const Task& t) { return std::string(t.name()); })
      .def_property_readonly("input_rows", &Task::input_rows)
      .def_property_readonly("input_cols", &Task::input_cols)
      .def_property_readonly("output_rows", &Task::output_rows)
      .def_property_readonly("output_cols", &Task::output_cols)
      .def_property_readonly("batch", &Task::batch);

  py::module_ cap = m.def_submodule("capacity", "Fisher memory curves of linear matrix RNNs (models/capacity)");
  auto net = [](const py::array_t<double, py::array::c_style | py::array::forcecast>& u,
                const py::array_t<double, py::array::c_style | py::array::forcecast>& v,
                const py::array_t<double, py::array::c_style | py::array::forcecast>& w, double eps1, double eps2) {
    capacity::MatrixNet n{matrix_of(u, "U"), matrix_of(v, "V"), matrix_of(w, "W"), {eps1, eps2}};
    capacity::check(n);
    return n;
  };
  cap.def("fmc_eq12",
          [net](const py::array_t<double, py::array::c_style | py::array::forcecast>& u,
                const py::array_t<double, py::array::c_style | py::array::forcecast>& v,
                const py::array_t<double, py::array::c_style | py::array::forcecast>& w, int k, double eps1,
                double eps2) { return curve_dict(capacity::fmc_eq12(net(u, v, w, eps1, eps2), k)); },
          py::arg("U"), py::arg("V"), py::arg("W"), py::arg("k") = 10, py::arg("eps1") = 1.0, py::arg("eps2") = 1.0,
          "The paper's Fisher memory curve (eqs. 12, 16) of X(n) = UᵀX(n−1)V + W s(n) + Z(n): dict j, total, "
          "input_information, relative.");
  cap.def("fmc_exact",
          [net](const py::array_t<double, py::array::c_style | py::array::forcecast>& u,
                const py::array_t<double, py::array::c_style | py::array::forcecast>& v,
                const py::array_t<double, py::array::c_style | py::array::forcecast>& w, int k, double eps1,
                double eps2) { return curve_dict(capacity::fmc_exact(net(u, v, w, eps1, eps2), k)); },
          py::arg("U"), py::arg("V"), py::arg("W"), py::arg("k") = 10, py::arg("eps1") = 1.0, py::arg("eps2") = 1.0,
          "The Fisher memory curve of the state's exact Gaussian law; same dict.");
  cap.def("spectral_radius",
          [](const py::array_t<double, py::array::c_style | py::array::forcecast>& a) {
            return capacity::spectral_radius(matrix_of(a, "matrix"));
          },
          py::arg("a"));
}

}  // namespace matmem::python
