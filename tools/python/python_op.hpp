// Ops written in Python (tools/python/README.md, "An op in Python"): matmem.register_op(name, forward,
// backward, ...) makes an OpDef whose kernels call the Python functions, and a registry entry, so that such an
// op runs on any tape, in gradcheck, `gradcheck_op` and models like a C++ op.
//
// The kernels find their Python functions by the index in OpAttrs::i[0], take the GIL (so they may run on any
// thread that does not itself hold it), copy the inputs out to numpy arrays and the results back in
// (convert.hpp). An exception raised by the Python code becomes a PythonError, a matmem::Error carrying the
// Python exception: C++ code in between sees an Error with a message, and when it reaches Python the
// original exception is raised again, with its type, message and traceback.
#pragma once
#include <memory>
#include <span>
#include <string>

#include <pybind11/pybind11.h>

#include "matmem/autodiff/tape.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem::python {

namespace py = pybind11;

/// A Python exception carried through C++ as a matmem::Error (see the file).
struct PythonError : Error {
  /// The exception `e` that Python code raised while `where` ("op square: its forward") ran.
  PythonError(const std::string& where, py::error_already_set& e);
  /// Sets the Python exception again as the current one (raised when control returns to Python).
  void restore() const;

 private:
  struct Held;
  std::shared_ptr<Held> held_;
};

/// Applies the Python op `index` (from register_op) to `inputs` on `tape`.
Var apply_python_op(std::int64_t index, Tape& tape, std::span<const Var> inputs);

}  // namespace matmem::python
