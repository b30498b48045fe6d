// Models from Python (tools/python/README.md, "Models and training"): the DSL's Model subclassed in Python,
// its Step, the registry of models and tasks by name, and the capacity functions.
//
// A Python subclass of matmem.Model declares its states in __init__ and overrides step(s); s is a Step valid
// during the call, whose Vars live on the tape the C++ caller (an Unroller, a Trainer's part) runs. The
// trampoline takes the GIL for the call, so a Python model runs on any thread (a Trainer with threads > 1
// runs its parts one at a time under the GIL: correct, not faster). An exception raised in step() reaches the
// Python caller as that exception (a PythonError in between).
//
// Ownership: a model made by the registry (register_model's factory) belongs to the C++ caller (a Trainer):
// the Python object gives up its C++ part, which keeps the Python object alive until C++ deletes it.
#pragma once
#include <pybind11/pybind11.h>

#include "matmem/models/core/model.hpp"

namespace matmem::python {

namespace py = pybind11;

/// Binds Init, Model, Step, the registry functions, run_steps and capacity into m.
void bind_models(py::module_& m);
/// Binds Config and Trainer (training_bindings.cpp).
void bind_training(py::module_& m);

/// A Python object that keeps `model` (owned by `owner`) alive: what a ParameterStore view holds.
std::shared_ptr<ParameterStore> params_of(Model& model, py::object owner);

}  // namespace matmem::python
