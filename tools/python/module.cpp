// The extension module _matmem, which the package matmem (tools/python/matmem) re-exports.
#include <pybind11/pybind11.h>

#include "matmem/runtime/blas.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/isa.hpp"
#include "matmem/tools/python/bindings.hpp"
#include "matmem/tools/python/model_bindings.hpp"
#include "matmem/tools/python/python_op.hpp"

namespace matmem::python {

void bind_errors(py::module_& m) {
  // Error is a RuntimeError; ShapeError also a ValueError, NumericError also an ArithmeticError.
  static py::handle error = PyErr_NewExceptionWithDoc("matmem.Error", "Base of every matmem error.",
                                                      PyExc_RuntimeError, nullptr);
  static py::handle shape_error = PyErr_NewExceptionWithDoc(
      "matmem.ShapeError", "Operands or arrays whose shapes do not fit.",
      py::make_tuple(error, py::handle(PyExc_ValueError)).release().ptr(), nullptr);
  static py::handle numeric_error = PyErr_NewExceptionWithDoc(
      "matmem.NumericError", "A NaN or Inf appeared (anomaly mode).",
      py::make_tuple(error, py::handle(PyExc_ArithmeticError)).release().ptr(), nullptr);
  m.attr("Error") = error;
  m.attr("ShapeError") = shape_error;
  m.attr("NumericError") = numeric_error;
  // Later translators are tried first: a Python op's error (a matmem::Error) comes back as what Python raised.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ShapeError& e) {
      PyErr_SetString(shape_error.ptr(), e.what());
    } catch (const NumericError& e) {
      PyErr_SetString(numeric_error.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PythonError& e) {
      e.restore();
    }
  });
}

}  // namespace matmem::python

PYBIND11_MODULE(_matmem, m) {
  using namespace matmem::python;
  m.doc() = "matmem's C++ core (libmatmem): tapes, ops, gradcheck; import the package matmem instead.";
  m.attr("__version__") = matmem::version();
  m.def("openblas_kernels", [] { return std::string(matmem::blas::core_name()); },
        "The kernels OpenBLAS runs (its openblas_get_corename()).");
  m.def("fitting_openblas_kernels", []() -> py::object {
    const char* core = matmem::blas::fitting_core();
    return core ? py::object(py::str(core)) : py::object(py::none());
  }, "The OPENBLAS_CORETYPE for this CPU when OpenBLAS took it for a Prescott, else None.");
  bind_errors(m);
  bind_tape(m);
  bind_ops(m);
  bind_python_op(m);
  bind_training(m), bind_models(m);
}
