"""Code loading: ``remote_code_load`` and ``code_copy`` (popxl 3.4 ``ops/code_copy.py``).

``remote_code_load(graph, destination)`` copies a graph's code from Streaming Memory to the
tiles. It has no inputs or outputs and changes no value, so numerically it does nothing; the
compile model gives it a remote-transfer program step (docs/ipu-model.md). Rules as popxl:
``destination`` is one of "executable", "compute_buffer", "io_buffer" (else ValueError); only
"executable" is implemented (the others raise NotImplementedError); a graph cannot load its own
code (ValueError). ``code_copy`` raises NotImplementedError in popxl 3.4 and here.
"""

from __future__ import annotations

from ..graph import Graph, add_op
from ._util import gcg

#: the destinations popxl knows (only "executable" is implemented by popxl 3.4)
CODE_LOCATIONS = ("executable", "compute_buffer", "io_buffer")


def _check_location(where: str) -> None:
    if where not in CODE_LOCATIONS:
        raise ValueError(f"Not a valid location: {where}. Must choose from: {', '.join(CODE_LOCATIONS)}")


def remote_code_load(graph: Graph, destination: str) -> None:
    """Load ``graph``'s code from Streaming Memory into ``destination`` ("executable")."""
    if not isinstance(graph, Graph):
        raise TypeError(f"remote_code_load needs a popxl Graph, got {type(graph).__name__}")
    parent = gcg()
    if parent is graph:
        raise ValueError(f"The remote_code_load op cannot load the code for the graph it resides in ({graph.id}).")
    _check_location(destination)
    if destination != "executable":
        raise NotImplementedError(
            f"destination == '{destination}' for remote_code_load op, graph {graph.id} not supported.")
    add_op("RemoteCodeLoad", "remote_code_load", [], [], {"code_graph": graph, "destination": destination})


def code_copy(graph: Graph, source: str, destination: str) -> None:
    """Not implemented by popxl 3.4 itself: always raises NotImplementedError."""
    raise NotImplementedError("popxl.ops.code_copy is not implemented in popxl 3.4 (nor by the simulator)")
