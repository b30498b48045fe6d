// The Python side of a tape and its values (tools/python/README.md, "The tape").
//
// A C++ Var is a (tape, node) pair valid until the tape is cleared. From Python a Var must never reach a
// node of a later pass or a freed tape, so the Python Var is (TapeRef, generation, node): the TapeRef counts
// its passes (clear() starts the next) and every use of a Var checks that its pass is still the tape's
// current one, else raises matmem.Error. The TapeRef also keeps alive, until clear(), what the tape only
// points to: the input tensors converted from numpy, parameter stores, graphs.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "matmem/autodiff/parameters.hpp"
#include "matmem/autodiff/tape.hpp"

namespace matmem::python {

namespace py = pybind11;

/// A tape as Python holds it: owned (matmem.Tape) or borrowed from C++ (gradcheck's tape, a trainer's), with
/// the pass counter and what the pass keeps alive.
struct TapeRef {
  std::unique_ptr<Tape> owned;  ///< set for a tape Python made
  Tape* tape = nullptr;         ///< nullptr once a borrowed tape is gone
  std::uint64_t generation = 0;  ///< the current pass; clear() increments it
  std::deque<Tensor> inputs;     ///< values given to tape.input, until clear()
  std::vector<std::shared_ptr<void>> keep;  ///< parameter stores, graphs, ... until clear()

  /// A tape Python owns, computing in `dtype`.
  explicit TapeRef(DType dtype) : owned(std::make_unique<Tape>(dtype)), tape(owned.get()) {}
  /// A tape C++ owns (valid until end_pass(), or retire()).
  explicit TapeRef(Tape* borrowed) : tape(borrowed) {}
  /// Starts a new pass: every Var of the last one becomes invalid and what it kept is released. Clears the
  /// tape itself when `clear_tape`.
  void end_pass(bool clear_tape);
  /// A borrowed tape is going away: every Var of it becomes invalid.
  void retire();
  /// The tape; matmem.Error when it is gone.
  Tape& get() const;
};

/// A Var as Python holds it.
struct PyVar {
  std::shared_ptr<TapeRef> ref;
  std::uint64_t generation = 0;
  std::uint32_t id = 0;

  /// The C++ Var; raises matmem.Error when its pass is over (the tape was cleared) or the tape is gone.
  Var get() const;
  /// Wraps a C++ Var of ref's current pass.
  static PyVar of(const std::shared_ptr<TapeRef>& ref, Var v) { return {ref, ref->generation, v.id}; }
};

/// A parameter as Python holds it (matmem.Parameter): the store keeps it alive. A model's store is held as a
/// shared_ptr aliasing the model.
struct PyParameter {
  std::shared_ptr<ParameterStore> store;
  Parameter* p = nullptr;
};

/// The current TapeRef of Vars given to one op: all must be valid and on the same tape (matmem.Error
/// otherwise, naming the op).
std::shared_ptr<TapeRef> common_tape(const std::string& op, const std::vector<const PyVar*>& vars);

/// Binds Tape, Var, Parameter, ParameterStore, NoGrad and gradcheck into m.
void bind_tape(py::module_& m);

}  // namespace matmem::python
