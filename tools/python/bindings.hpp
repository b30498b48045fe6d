// The binders of the module _matmem (module.cpp calls each once), one per source file.
#pragma once
#include <pybind11/pybind11.h>

#include "matmem/tools/python/tape_bindings.hpp"

namespace matmem::python {

/// matmem.Error, ShapeError, NumericError, and the translation of C++ exceptions into them.
void bind_errors(py::module_& m);
/// Every op with a public front-end into the submodule m.ops (ops_bindings.cpp).
void bind_ops(py::module_& m);
/// register_op: ops written in Python (python_op.cpp).
void bind_python_op(py::module_& m);

}  // namespace matmem::python
