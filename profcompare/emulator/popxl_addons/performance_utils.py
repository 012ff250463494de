"""popxl-addons' FLOPs estimate (``performance_utils``, same in 3.0 and 3.4), on the simulator's
graphs, with popxl-addons' counting rules:

- only op types ``MatMul`` (``2 * k * prod(output shape)``, ``k`` the lhs's last dimension),
  ``Add``/``Sub``/``Mul``/``Div`` (``prod(output shape)``) and ``GroupNormalization`` count; every
  other op counts 0 and is left out. ``prod(())`` is numpy's ``1.0``, so a scalar output gives
  a float, as in popxl-addons. The group-norm count uses the input's last two dimensions
  whatever its rank (``(N, C)`` input: ``C * N / groups`` averaged elements), as popxl-addons does.
- ops calling a graph (``Call``, ``Loop``) add that graph's breakdown under the key
  ``"<op type>_<op id>(<graph id without _subgraph(n)>)"``, a loop's multiplied by its trip
  count. popxl's ``repeat`` loops a wrapper graph ``<graph>__loop_wrapper`` that calls the user's
  graph; the simulator has no wrapper, so that inner level is keyed ``Call_<loop op id>(<graph>)``.
  ``If`` ops are not followed (PopART's IfOp does not expose its graphs that way), as in popxl-addons.
- ``evaluate_ir_FLOPs`` multiplies the main graph's by the replication factor.

A breakdown maps op type -> {op id or call key: FLOPs (nested)} plus ``"TOT"`` -> the total.
Op ids are the simulator's (ints), not PopART's numbering. Gradient graphs are counted as the
simulator's autodiff builds them (``MatMul``, ``Mul``, ``Add`` ops), which is how PopART's IR
looks once a Session has applied its patterns; right after autodiff PopART holds gradient ops
(``MatMulLhsGrad``, ``Sum``, ...) that popxl-addons does not count.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from math import floor, log10
from typing import Any, Literal

import numpy as np

from profcompare.emulator.popxl.utils import table_to_string
from profcompare.emulator.popxl_addons._compat import popxl

Breakdown = dict[str, Any]
FORMATS = ("K", "M", "G", "T", "nearest3")


def _matmul_flops(op: Any) -> Any:
    k = op.inputs[0].shape[-1]
    return 2 * k * np.prod(op.outputs[0].shape)


def _elementwise_binary_flops(op: Any) -> Any:
    return np.prod(op.outputs[0].shape)


def _group_norm_flops(op: Any) -> Any:
    x_shape, out_shape, mean_shape = op.inputs[0].shape, op.outputs[0].shape, op.outputs[1].shape
    groups = int(mean_shape[0] / x_shape[0])
    averaged = int(x_shape[-1] * x_shape[-2] / groups)
    mean_flops = averaged
    variance_flops = 2 * averaged + 2 * mean_shape[0]
    out_elements = np.prod(out_shape)
    return mean_flops + variance_flops + 2 * out_elements + out_elements + out_elements


#: PopART op type -> FLOPs of one op
FLOPS_FNS: dict[str, Callable[[Any], Any]] = {
    "Add": _elementwise_binary_flops,
    "Sub": _elementwise_binary_flops,
    "Div": _elementwise_binary_flops,
    "Mul": _elementwise_binary_flops,
    "MatMul": _matmul_flops,
    "GroupNormalization": _group_norm_flops,
}
#: the simulator's op types that PopART records under another type
_POPART_TYPE = {"MatMulPow2Scaled": "MatMul"}


def _multiply(value: Any, factor: int) -> Any:
    if isinstance(value, Mapping):
        return {k: _multiply(v, factor) for k, v in value.items()}
    return value * factor


def _total(value: Any) -> Any:
    if isinstance(value, Mapping):
        return sum(map(_total, value.values()))
    return value


def _graph_key(graph_id: str) -> str:
    return re.sub(r"_subgraph\(\d+\)", "", graph_id)


def _nest(breakdown: Mapping[str, Any], key: str) -> Breakdown:
    """A called graph's breakdown as its call site records it: every entry under ``key``."""
    return {k: {key: v} for k, v in breakdown.items()}


def _add_called(into: defaultdict, called: Mapping[str, Any], key: str) -> Any:
    for k, v in _nest(called, key).items():
        into[k].update(v)
    return called["TOT"]


def _graph_flops(graph: Any, visited: dict[Any, Breakdown]) -> Breakdown:
    if graph in visited:
        return visited[graph]
    total: Any = 0
    breakdown: defaultdict = defaultdict(dict)
    for op in graph.ops:
        op_type = _POPART_TYPE.get(op.type, op.type)
        if op_type == "Call":
            called = op.attrs["called_graph"]
            total += _add_called(breakdown, _graph_flops(called, visited), f"Call_{op.id}({_graph_key(called.id)})")
        elif op_type == "Loop":
            body = op.attrs["called_graph"]
            wrapper: defaultdict = defaultdict(dict)
            wrapper_total = _add_called(wrapper, _graph_flops(body, visited), f"Call_{op.id}({_graph_key(body.id)})")
            wrapper.update({"TOT": wrapper_total})
            looped = _multiply(dict(wrapper), int(op.attrs["repeat_count"]))
            total += _add_called(breakdown, looped, f"Loop_{op.id}({_graph_key(body.id)}__loop_wrapper)")
        elif op_type in FLOPS_FNS:
            flops = FLOPS_FNS[op_type](op)
            total += flops
            breakdown[op_type].update({int(op.id): flops})
    breakdown.update({"TOT": total})
    visited[graph] = breakdown
    return breakdown


def evaluate_FLOPs(graph: popxl.Graph) -> dict[str, Any]:  # noqa: N802 - popxl-addons' name
    """Return the FLOPs breakdown of ``graph`` and the graphs it calls (see the module docstring);
    ``"TOT"`` holds the total."""
    return _graph_flops(graph, {})


def evaluate_ir_FLOPs(ir: popxl.Ir) -> dict[str, Any]:  # noqa: N802 - popxl-addons' name
    """Return the FLOPs breakdown of ``ir``'s main graph times the replication factor."""
    return _multiply(evaluate_FLOPs(ir.main_graph), ir.replication_factor)


def total_FLOPs(ir: popxl.Ir) -> Any:  # noqa: N802 - popxl-addons' name
    """Return the FLOPs of the whole ``ir`` (all replicas)."""
    return evaluate_ir_FLOPs(ir)["TOT"]


def _flatten(breakdown: Mapping[str, Any], into: dict[str, Any], prefix: str = "") -> None:
    for k, v in breakdown.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            _flatten(v, into, key)
        else:
            into[key] = v


def print_FLOPs(flops_breakdown: dict[str, Any], mode: Literal["type", "flat"] = "type",  # noqa: N802
                numerical_format: Literal["K", "M", "G", "T", "nearest3"] = "nearest3") -> None:
    """Print a breakdown as a table, largest first: per op type with its share of the total
    (``mode="type"``), or one row per op with its dotted key path and a final TOT row (``"flat"``)."""
    if mode == "type":
        rows: list[list[Any]] = [["Op Type", "FLOPs", "%"]]
        grouped: defaultdict = defaultdict(lambda: 0)
        for k, v in flops_breakdown.items():
            grouped[k] += _total(v)
        for k, v in sorted(grouped.items(), key=lambda item: item[1], reverse=True):
            rows.append([k, format_flops_scientific(v, numerical_format), f"{100 * v / grouped['TOT']:.1f}"])
    elif mode == "flat":
        rows = [["Op Type", "FLOPs", "Op Name"]]
        flat: dict[str, Any] = {}
        _flatten(flops_breakdown, flat)
        for k, v in sorted(flat.items(), key=lambda item: item[1], reverse=True):
            rows.append([k.split(".")[0], format_flops_scientific(v, numerical_format), k])
        rows.append(["TOT", format_flops_scientific(flat["TOT"], numerical_format), ""])
    else:
        raise ValueError("Unknown mode specified. Please use `type` or `flat`.")
    print(table_to_string(rows))


def format_flops_scientific(val: Any, format: Literal["K", "M", "G", "T", "nearest3"] = "nearest3") -> str:  # noqa: A002
    """Return ``val`` as ``<mantissa with 3 decimals>E<sign><2-digit exponent>``: the exponent a
    multiple of 3 (``"nearest3"``: the one nearest the value's order of magnitude, rounding a
    remainder of 2 up) or fixed by ``"K"``/``"M"``/``"G"``/``"T"`` (3/6/9/12). ValueError otherwise."""
    if format not in FORMATS:
        raise ValueError("unknown format specified")
    if format == "nearest3":
        power = floor(log10(abs(val))) if val > 0.0 else 0
        exponent = 3 * (power // 3 + int(power % 3 == 2))
    else:
        exponent = {"K": 3, "M": 6, "G": 9, "T": 12}[format]
    mantissa = val * 10 ** (-exponent)
    return f"{mantissa:.3f}E{'+-'[exponent < 0]}{abs(exponent):0>2}"


_NOTE = ("op ids are the simulator's; gradient graphs count the simulator's gradient ops (MatMul, Mul, Add), as "
         "PopART's IR looks after the Session's patterns")
for _fn in (evaluate_FLOPs, evaluate_ir_FLOPs, total_FLOPs):
    _fn.__simulator_note__ = _NOTE  # type: ignore[attr-defined]

__all__ = ["evaluate_FLOPs", "evaluate_ir_FLOPs", "format_flops_scientific", "print_FLOPs", "total_FLOPs"]
