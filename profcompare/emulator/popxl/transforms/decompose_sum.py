"""``popxl.transforms.decompose_sum``: PopART's DecomposeSum rewrites every ``Sum`` op with more
than two inputs into a zero ``Init`` and a chain of ``Add`` ops (earliest-available partial
first), so that gradient partials need not all be live at once.

In popxl those ``Sum`` ops come from autodiff, which sums the gradient partials of a tensor used
several times. The simulator's autodiff already sums them with a chain of ``Add`` ops, and no
popxl op creates a ``Sum``, so a simulated graph has nothing to rewrite: the transform returns
the graph unchanged. (Adding PopART's zero first changes no value; the order in which the
simulator adds the partials, the order of the uses, may differ from PopART's earliest-first one,
which can change float rounding.)
"""

from __future__ import annotations

from ..graph import Graph


def decompose_sum(graph: Graph) -> Graph:
    """Return ``graph`` with its many-input ``Sum`` ops decomposed into additions (the simulator's
    graphs have none: see the module docstring)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"decompose_sum needs a popxl.Graph, got {type(graph).__name__}")
    return graph


__all__ = ["decompose_sum"]
