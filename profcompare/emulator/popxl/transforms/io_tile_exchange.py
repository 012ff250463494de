"""``popxl.transforms.io_tile_exchange``: ``io_tiles()``, ``merge_exchange()`` and
``in_sequence(False)`` in one block, checking that the block leaves a single op.

The check follows PopART's MergeExchange: the host and remote transfers created in the block
(HostLoad, HostStore, RemoteLoad, RemoteLoadInplace, RemoteStore, RemoteCodeLoad) merge into one
exchange op unless one of them reads what another one produced (those cannot be merged);
``Init`` ops do not count; any other op stays as it is. More than one op left means the I/O
cannot overlap the following compute, and popxl raises RuntimeError. The simulator keeps the
transfers as separate ops marked with one merge group (see ``merge_exchange``), so it counts the
ops that *would* remain.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..context import gcg, in_sequence, io_tiles, merge_exchange
from ..graph import Op

#: op types PopART's MergeExchange merges
EXCHANGE_OP_TYPES = frozenset({"HostLoad", "HostStore", "RemoteLoad", "RemoteLoadInplace", "RemoteStore",
                               "RemoteCodeLoad"})


def ops_left_after_merge(created: list[Op]) -> list[str]:
    """Names of the ops a merge of ``created`` (the non-Init ops of a block) leaves: every
    non-exchange op, plus one merged exchange op when the transfers are independent (each
    transfer separately when one reads another's output, since those never share a merge)."""
    exchanges = [op for op in created if op.type in EXCHANGE_OP_TYPES]
    others = [f"{op.type} ({op.name})" for op in created if op.type not in EXCHANGE_OP_TYPES]
    produced = {id(t) for op in exchanges for t in op.outputs}
    dependent = any(id(t) in produced for op in exchanges for t in (*op.inputs, *op.modified))
    if not exchanges:
        return others
    if dependent:
        return others + [f"{op.type} ({op.name})" for op in exchanges]
    return others + [f"MultiExchange of {len(exchanges)} transfer(s)"]


@contextlib.contextmanager
def io_tile_exchange(verify_overlap: bool = True) -> Iterator[None]:
    """Run the block on the I/O tiles, merge its transfers and leave them unordered; with
    ``verify_overlap``, RuntimeError when more than one op remains after the merge."""
    graph = gcg()
    created: list[Op] = []

    def record(op: Op) -> None:
        if op.type != "Init":
            created.append(op)

    handle = graph.register_op_created_hook(record)
    try:
        with io_tiles(), merge_exchange(), in_sequence(False):
            yield
    finally:
        graph.remove_op_created_hook(handle)
    if verify_overlap:
        left = ops_left_after_merge(created)
        if len(left) > 1:
            raise RuntimeError("More than one Op remained after `io_tile_exchange`, which prevents its overlap "
                               "with the following compute. Remaining ops:\n   " + "\n   ".join(left))


__all__ = ["EXCHANGE_OP_TYPES", "io_tile_exchange", "ops_left_after_merge"]
