"""popxl-addons 3.4 ``disable_fc_pass`` / ``enable_fc_pass``: turn PopART's fully-connected pass
(weights of a matmul prepared transposed for the backward pass) off or back on for every
``MatMul`` op of the Ir (float8 ones too). The simulator records the setting on the op
(``attrs["fully_connected_pass"]``): under the pass an input gradient's transposed weights take
PopLibs' transpose or copy path (compile/fc_weight_transpose.py); without it neither is modelled.
popxl-addons 3.0 has neither function.
"""

from __future__ import annotations

from profcompare.emulator.popxl_addons._compat import popxl

__all__ = ["disable_fc_pass", "enable_fc_pass"]

#: op types of PopART's MatMulOp, the op exposing the setting
_MATMULS = frozenset({"MatMul", "MatMulPow2Scaled"})
_NOTE = ("recorded on the MatMul ops (attrs fully_connected_pass); under the pass the simulator models an input "
         "gradient's transposed weights as PopLibs prepares them, without it not")


def _set(ir: popxl.Ir, enabled: bool) -> None:
    for graph in ir.graphs:
        for op in graph.ops:
            if op.type in _MATMULS:
                op.attrs["fully_connected_pass"] = enabled


def disable_fc_pass(ir: popxl.Ir) -> None:
    """Turn the fully-connected pass off on every matmul of ``ir`` (inference needs no transposed
    weights)."""
    _set(ir, False)


def enable_fc_pass(ir: popxl.Ir) -> None:
    """Turn the fully-connected pass back on on every matmul of ``ir``."""
    _set(ir, True)


disable_fc_pass.__simulator_note__ = _NOTE  # type: ignore[attr-defined]
enable_fc_pass.__simulator_note__ = _NOTE  # type: ignore[attr-defined]
