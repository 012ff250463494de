"""Text listing of a graph for ``GraphWithNamedArgs.print_schedule``."""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._compat import not_supported
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors


def format_schedule(graph: Any, args: NamedTensors) -> str:
    """Return ``Graph : <name>``, then ``(inputs) -> (outputs) {``, one line per op in schedule
    order as ``OpType.id (%n [shape dtype], ...) -> (...)`` (called graph in parentheses for
    calls), then ``}``. Tensors are numbered %1, %2, ... in order of appearance; named args show
    as ``key=%n``."""
    ops = getattr(graph, "ops", None)
    if ops is None:
        raise not_supported("GraphWithNamedArgs.print_schedule", "the popxl graph does not list its ops")
    numbers: dict[Any, int] = {}

    def number(t: Any) -> int:
        if t.id not in numbers:
            numbers[t.id] = len(numbers) + 1
        return numbers[t.id]

    def tensor_text(t: Any) -> str:
        return f"%{number(t)} [{tuple(t.shape)} {t.dtype.name}]"

    names = {t.id: key for key, t in args.to_dict().items()}
    inputs = []
    for t in graph.inputs:
        label = f"{names[t.id]}=" if t.id in names else ""
        inputs.append(f"{label}{tensor_text(t)}")
    lines = [f"Graph : {graph.name}"]
    op_lines = []
    for op in ops:
        head = f"{op.type}.{op.id}"
        called = op.attrs.get("called_graph") if isinstance(getattr(op, "attrs", None), dict) else None
        if called is not None:
            head += f"({getattr(called, 'name', called)})"
        ins = ", ".join(tensor_text(t) for t in op.inputs)
        outs = ", ".join(tensor_text(t) for t in op.outputs)
        op_lines.append(f"    {head} ({ins}) -> ({outs})")
    outputs = ", ".join(f"%{number(t)}" for t in graph.outputs)
    lines.append(f"  ({', '.join(inputs)}) -> ({outputs}) {{")
    lines.extend(op_lines)
    lines.append("  }")
    return "\n".join(lines)
