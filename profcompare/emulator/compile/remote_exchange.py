"""Merged remote exchanges: which Streaming Memory transfers share one exchange.

A remote transfer on its own is one exchange with the gateway: a Begin (the external sync and the
fixed cost of a Streaming Memory transfer, ``remote_transfer_seconds``), the data (its bytes
over the gateway) and an End (the closing external sync) -- programs.templates.

Transfers made inside ``popxl.transforms.merge_exchange()`` (popxl-addons' ``load_remote_graph``,
``store_remote_graph``, ``load_remote``, ``store_remote`` and batch serialisation's load and store
blocks all make theirs there) become one exchange, as PopART builds it:

- PopART's MergeExchange (graphcore/popart ``willow/src/transforms/mergeexchange.cpp``,
  ``applyToOps`` over the ops created in the block, in schedule order) collects the block's
  transfers into one ``MultiExchangeOp``. ``Init`` ops do not interrupt a merge; any other op of
  the block does, and so does a transfer that reads what an earlier one of the merge produced
  (a data dependency). A merge of one transfer is no merge.
- ``MultiExchangeOpx`` (``willow/src/popx/op/exchange/multiexchangex.cpp``) grows the merged
  transfers' copies back to back in one sequence, cut into segments only where a resource (one
  remote buffer in one direction) is used a second time (``getSegments``: its landing pad must be
  free again).
- popxl's documentation of ``merge_exchange`` says what that buys: "any external synchronisation
  for these operations are merged allowing for the operations to execute in parallel".

So the model gives each segment one Begin (one fixed cost, one sync) before its first transfer's
data and one End after its last transfer's data; each transfer keeps its data step with its own
bytes, so a segment costs one fixed cost plus all its transfers' bytes over the gateway.
ASSUMPTION: host transfers made in the same block keep their own host copies (their costs are the
real trace's, measured on host copies made one by one, section 12 of docs/ipu-model.md) and do not
interrupt the merge of the remote ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from profcompare.emulator.program import LoweredProgram, OpInfo

#: op classes (programs.classify) that are remote buffer transfers
REMOTE_CLASSES = frozenset({"remote_load", "remote_store"})
#: op classes that do not interrupt a merge: Init ops (PopART's initOpConstraints schedules them
#: before the merged exchange) and host transfers (module docstring: they keep their own copies)
_PASS_CLASSES = frozenset({"write_undef", "init", "host_load", "host_store"})


@dataclass(frozen=True)
class ExchangeMember:
    """A remote transfer's place in the merged exchange it belongs to."""

    exchange: int  # index of the merged exchange (segment) in the program
    position: int  # 0 for the exchange's first transfer
    size: int  # transfers in the exchange

    @property
    def first(self) -> bool:
        """True for the transfer whose Begin opens the exchange."""
        return self.position == 0

    @property
    def last(self) -> bool:
        """True for the transfer whose End closes the exchange."""
        return self.position == self.size - 1


def _resource(op: OpInfo, op_class: str) -> tuple[object, str]:
    return op.attrs.get("remote_buffer"), op_class


def _block_segments(ops: list[OpInfo], op_class: Mapping[str, str]) -> list[list[OpInfo]]:
    """One merge_exchange block's remote transfers cut into exchanges (merged_exchanges)."""
    segments: list[list[OpInfo]] = [[]]
    produced: set[str] = set()
    resources: set[tuple[object, str]] = set()
    for op in ops:
        cls = op_class.get(op.id, "")
        if cls in REMOTE_CLASSES:
            resource = _resource(op, cls)
            if resource in resources or any(t in produced for t in (*op.inputs, *op.modified)):
                segments.append([])
                produced.clear()
                resources.clear()
            segments[-1].append(op)
            produced.update(op.outputs)
            resources.add(resource)
        elif cls not in _PASS_CLASSES and segments[-1]:
            segments.append([])
            produced.clear()
            resources.clear()
    return segments


def merged_exchanges(program: LoweredProgram, op_class: Mapping[str, str]) -> dict[str, ExchangeMember]:
    """The remote transfers that share a merged exchange with at least one other, by op id.

    Walks each ``merge_exchange`` block's ops (``attrs["merge_exchange"]``, per graph) in the
    program's op order and cuts the block's remote transfers into exchanges by PopART's rules
    (module docstring): a new exchange starts after any op of the block that is neither a transfer
    nor an Init, at a transfer reading an output of the exchange's transfers, and at a second use
    of one remote buffer in one direction. Transfers alone in their exchange are left out.
    """
    blocks: dict[tuple[str, object], list[OpInfo]] = {}
    for op in program.ops.values():
        group = op.attrs.get("merge_exchange")
        if group is not None:
            blocks.setdefault((op.graph, group), []).append(op)
    segments = [seg for ops in blocks.values() for seg in _block_segments(ops, op_class) if len(seg) > 1]
    out: dict[str, ExchangeMember] = {}
    for index, members in enumerate(segments):
        for position, op in enumerate(members):
            out[op.id] = ExchangeMember(index, position, len(members))
    return out


Template = tuple[str, str, str]


def member_templates(steps: Iterable[Template], member: ExchangeMember | None) -> tuple[Template, ...]:
    """A remote transfer's steps (programs.templates) inside its merged exchange: the Begin only
    on the exchange's first transfer, the End only on its last; unchanged outside a merge."""
    if member is None:
        return tuple(steps)
    return tuple(s for s in steps
                 if not (s[2] == "remote_begin" and not member.first) and not (s[2] == "remote_end" and not member.last))


def exchanges_per_run(program: LoweredProgram, op_class: Mapping[str, str]) -> int:
    """Remote exchanges one run of the main program makes: every execution of a remote transfer
    that opens an exchange (one alone, or a merged exchange's first transfer)."""
    merged = merged_exchanges(program, op_class)
    count = 0
    for entry in program.schedule:
        if op_class.get(entry.op) in REMOTE_CLASSES:
            member = merged.get(entry.op)
            count += member is None or member.first
    return count


__all__ = ["ExchangeMember", "REMOTE_CLASSES", "exchanges_per_run", "member_templates", "merged_exchanges"]
