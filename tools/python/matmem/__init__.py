"""matmem from Python: tapes, every op, gradcheck and ops written in numpy (tools/python/README.md).

Arrays are numpy float32 or float64, C-contiguous, [B,r,c] (a batch of matrices; a parameter is [1,r,c]) or
[B,N,r,c] (a memory). Every array going in or coming out is a copy.
"""
from ._matmem import (Error, GradcheckReport, Neighbours, NoGrad, NumericError, Parameter, ParameterStore,
                      PythonOp, ShapeError, Tape, Var, __version__, gradcheck, gradcheck_op, op_names)
from ._matmem import register_op as _register_op
from ._matmem import fitting_openblas_kernels as _fitting_openblas_kernels
from . import ops
from ._matmem import (Config, ChainLink, Init, Model, Step, Task, Trainer, capacity, make_model, model_names, register_config_key, register_model, run_steps, task_names)  # noqa: E501 models and training


def _check_openblas_kernels():
    # OpenBLAS chooses its kernels as it is loaded; one that does not know this CPU's model runs its SSE3
    # (Prescott) ones, SGEMM at a fifth of the rate on an AVX-512 CPU. The matmem command restarts itself with
    # OPENBLAS_CORETYPE set; a Python process has loaded OpenBLAS by now, so it can only say so.
    core = _fitting_openblas_kernels()
    if core:
        import warnings
        warnings.warn(f"OpenBLAS runs its Prescott (SSE3) kernels on this CPU, a model it does not know; start Python "
                      f"with OPENBLAS_CORETYPE={core} in the environment for this CPU's own (GEMMs several times "
                      f"faster)", RuntimeWarning, stacklevel=3)


_check_openblas_kernels()


def register_op(name, forward, backward, *, output_shape=None, sample_shapes, sample_range=(-1.0, 1.0),
                atol=0.0, rtol=0.0):
    """Registers an op written in Python; returns op(*vars) -> Var, also reachable as matmem.ops.<name>.

    forward(*xs) -> y; backward(*xs, y, grad_y) -> one gradient per input (None for none), on numpy copies of
    the tape's dtype. output_shape(*shapes) -> shape (default: the first input's). sample_shapes: one shape
    per input, from which gradcheck_op(name) draws inputs uniform in sample_range.
    """
    op = _register_op(name, forward, backward, output_shape=output_shape, sample_shapes=list(sample_shapes),
                      sample_range=tuple(sample_range), atol=atol, rtol=rtol)
    if not hasattr(ops, name):
        setattr(ops, name, op)
    return op


def _binary(op, scalar):
    def method(self, other):
        if isinstance(other, Var):
            return op(self, other)
        if isinstance(other, (int, float)):
            return scalar(self, float(other))
        return NotImplemented
    return method


# Operators for model code, as in C++ (ops/ops.hpp): + - * on Vars, and with a number.
Var.__add__ = _binary(ops.add, lambda x, a: ops.affine(x, 1.0, a))
Var.__radd__ = Var.__add__
Var.__sub__ = _binary(ops.sub, lambda x, a: ops.affine(x, 1.0, -a))
Var.__rsub__ = _binary(lambda x, y: ops.sub(y, x), lambda x, a: ops.affine(x, -1.0, a))
Var.__mul__ = _binary(ops.hadamard, ops.scale)
Var.__rmul__ = Var.__mul__
Var.__neg__ = lambda self: ops.scale(self, -1.0)

__all__ = ["Error", "GradcheckReport", "Neighbours", "NoGrad", "NumericError", "Parameter", "ParameterStore",
           "PythonOp", "ShapeError", "Tape", "Var", "__version__", "gradcheck", "gradcheck_op", "op_names", "ops",
           "register_op"]
