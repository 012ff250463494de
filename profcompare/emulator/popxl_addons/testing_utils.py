"""popxl-addons ``testing_utils``: ``ops_of_type`` (both generations); ``TensorInput`` and
``run_module`` (3.4 only).

``run_module`` builds a fresh Ir: ``TensorInput`` arguments become main-graph variables (of the
given dtype, else the array's popxl dtype), the module's graph is created from the arguments
and called with its freshly initialised variables and the tensor arguments, and every graph
output is stored to the host. It runs the session once (``ipu_hw``), after writing the
``weights`` (a mapping, or a callable given the module's variables) into it, and returns the
outputs as numpy arrays in output order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Union

import numpy as np

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons._generation import current
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.ops import host_store

Weights = Union[Mapping[Any, np.ndarray], Callable[[NamedTensors], Mapping[Any, np.ndarray]]]


def ops_of_type(ops: Iterable[Any], op_type: type) -> int:
    """Return how many of ``ops`` are instances of ``op_type``."""
    return len([op for op in ops if isinstance(op, op_type)])


class TensorInput:
    """A host array to be passed to ``run_module`` as a tensor argument (a variable of
    ``dtype``, or of the array's popxl dtype when ``dtype`` is None)."""

    def __init__(self, data: np.ndarray, dtype: popxl.dtype | None = None) -> None:
        self.data = data
        self.dtype = dtype


def _as_argument(value: Any) -> Any:
    if not isinstance(value, _TensorInput):
        return value
    dtype = value.dtype if value.dtype is not None else popxl.dtype.as_dtype(value.data)
    return popxl.variable(value.data, dtype=dtype)


def run_module(module: Module, *args: Any, weights: Weights | None = None, **kwargs: Any) -> list[np.ndarray]:
    """Build ``module`` with ``args``/``kwargs``, run it once and return its outputs' values (see
    the module docstring)."""
    ir = popxl.Ir()
    with ir.main_graph:
        new_args = [_as_argument(a) for a in args]
        new_kwargs = {k: _as_argument(v) for k, v in kwargs.items()}
        factories, graph = module.create_graph(*new_args, **new_kwargs)
        variables = factories.init()
        tensor_args = [a for a in new_args if isinstance(a, popxl.Tensor)]
        tensor_kwargs = {k: a for k, a in new_kwargs.items() if isinstance(a, popxl.Tensor)}
        outputs = graph.bind(variables).call(*tensor_args, **tensor_kwargs)
        streams = [host_store(o) for o in outputs]

    with popxl.Session(ir=ir, device_desc="ipu_hw") as session:
        if weights:
            if callable(weights):
                weights = weights(variables)
            session.write_variables_data(weights)
        values = session.run()
    return [values[s] for s in streams]


# the 3.4-only names are no module globals: the module ``__getattr__`` resolves them (and
# ``__all__``, for star imports) for the emulated generation
_TensorInput, _run_module = TensorInput, run_module
del TensorInput, run_module
_SINCE_30 = {"TensorInput": _TensorInput, "run_module": _run_module}


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return ["ops_of_type"] + ([] if current() == "3.0" else list(_SINCE_30))
    if name in _SINCE_30 and current() != "3.0":
        return _SINCE_30[name]
    if name in _SINCE_30:
        raise AttributeError(f"module 'popxl_addons.testing_utils' has no attribute {name!r} (not in popxl-addons "
                             "3.0; the 3.4 generation has it: PROFCOMPARE_SIM_ADDONS=3.4 or --addons 3.4)")
    raise AttributeError(f"module 'popxl_addons.testing_utils' has no attribute {name!r}")
