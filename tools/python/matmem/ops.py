"""matmem's ops by their C++ names (ops/ops.hpp), on matmem.Var operands of one tape; ops written in Python
join this namespace when registered (matmem.register_op)."""
from ._matmem import ops as _ops

globals().update({name: getattr(_ops, name) for name in dir(_ops) if not name.startswith("_")})
__all__ = [name for name in dir(_ops) if not name.startswith("_")]
