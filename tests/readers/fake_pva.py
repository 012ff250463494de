"""A stand-in for the SDK's ``pva`` module: plain objects with the documented attribute names.

Only names listed in shared/reference/pva.md appear here, shaped as described there
(``.type.name`` enums, per-tile lists, ``memory.category.<name>.total`` ...).
"""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any


def enum(name: str) -> NS:
    return NS(name=name)


def tile(including: int, excluding: int, always: int, not_always: int, categories: dict[str, int],
         overflowed: int = 0) -> NS:
    return NS(
        memory=NS(
            total=NS(includingGaps=including, excludingGaps=excluding),
            overflowed=NS(includingGaps=overflowed, excludingGaps=overflowed),
            alwaysLiveBytes=always,
            notAlwaysLiveBytes=not_always,
            category=NS(**{name: NS(total=value) for name, value in categories.items()}),
        )
    )


def program(name: str, type_name: str, *, children: list[NS] | None = None, control: list[int] | None = None,
            exchange: list[int] | None = None, pid: int | None = None) -> NS:
    attrs: dict[str, Any] = {"name": name, "type": enum(type_name), "children": children or []}
    if pid is not None:
        attrs["_id"] = pid
    if control is not None:
        attrs["controlCodeByTile"] = control
    if exchange is not None:
        attrs["codeBytesByTile"] = exchange
    return NS(**attrs)


def variable(name: str, size: int) -> NS:
    return NS(name=name, size=size)


def liveness_step(prog: NS, nal_bytes: int, variables: list[NS]) -> NS:
    return NS(program=prog, notAlwaysLiveMemory=NS(bytes=nal_bytes, variables=variables))


def build_report_tree(*, with_execution: bool = True) -> NS:
    """A 2-IPU replica (2 tiles per IPU), replicated twice, with liveness, code and two runs."""
    fwd = program("fwd/matmul", "OnTileExecute", control=[10, 10, 10, 10], pid=11)
    exch = program("fwd/exchange", "DoExchange", control=[1, 1, 1, 1], exchange=[100, 100, 50, 50], pid=12)
    seq = program("main", "Sequence", children=[fwd, exch], control=[99, 99, 99, 99], pid=10)
    copy = program("host/copy", "StreamCopyMid", control=[2, 2, 0, 0], exchange=[7, 7, 0, 0], pid=13)
    tiles = [
        tile(1000, 900, 600, 300, {"vertexCode": 100, "controlCode": 20, "constant": 5, "stack": 64}),
        tile(1100, 950, 650, 300, {"vertexCode": 110, "controlCode": 20, "constant": 5, "stack": 64}),
        tile(700, 690, 500, 190, {"vertexCode": 90, "controlCode": 20, "constant": 0, "stack": 64}),
        tile(640000, 700, 500, 200, {"vertexCode": 90, "controlCode": 20, "constant": 0, "stack": 64}, overflowed=1),
        # tiles of the second replica: the model is per replica, so these are not read
        tile(1, 1, 1, 1, {"vertexCode": 1, "controlCode": 1, "constant": 1, "stack": 1}),
        tile(1, 1, 1, 1, {"vertexCode": 1, "controlCode": 1, "constant": 1, "stack": 1}),
        tile(1, 1, 1, 1, {"vertexCode": 1, "controlCode": 1, "constant": 1, "stack": 1}),
        tile(1, 1, 1, 1, {"vertexCode": 1, "controlCode": 1, "constant": 1, "stack": 1}),
    ]
    steps = [
        liveness_step(copy, 40, [variable("layer0.weight", 40)]),  # the documented parameter quirk
        liveness_step(fwd, 300, [variable("act/x", 200), variable("act/y", 100)]),
        liveness_step(exch, 250, [variable("act/y", 100), variable("Gradient___w", 150)]),
        liveness_step(fwd, 150, [variable("Gradient___w", 150)]),
    ]
    always = [
        variable("layer0.weight", 4096),
        variable("Adam/first_order/layer0.weight", 2048),
        variable("vertexCode", 400),  # pseudo-variable: a memory category, not a variable
        variable("accum/layer0.weight", 4096),
        variable("</script><b>x</b>", 8),
    ]
    compilation = NS(
        target=NS(numIPUs=4, tilesPerIpu=2, bytesPerTile=638976, clockFrequency=1330000000.0, numReplicas=2,
                  ipusPerReplica=2, numTiles=8, architecture=enum("Ipu2"), type=enum("Ipu")),
        tiles=tiles,
        livenessProgramSteps=steps,
        alwaysLiveVariables=always,
        programs=[seq, fwd, exch, copy],
    )
    execution = NS(totalCycles=NS(total=0), runs=[])
    if with_execution:
        def ex_step(prog: NS, *per_ipu: tuple[int, int, int]) -> NS:
            """One execution step: per IPU (cycles, activeCycles from, activeCycles to)."""
            return NS(program=prog, ipus=[
                NS(cycles=c, activeCycles=NS(cyclesFrom=NS(min=a, max=a), cyclesTo=NS(min=b, max=b)))
                for c, a, b in per_ipu])

        # the SyncAns of run 0 waits over the whole run: it overlaps every other step
        sync = program("SyncAns", "SyncAns")
        runs = [
            NS(name="run0", steps=[ex_step(fwd, (500, 0, 500), (700, 0, 700)), ex_step(exch, (80, 700, 780), (60, 700, 760)),
                                   ex_step(copy, (30, 780, 810), (0, 780, 780)), ex_step(sync, (810, 0, 810), (810, 0, 810))]),
            NS(name="run1", steps=[ex_step(fwd, (510, 1000, 1510), (690, 1000, 1690)),
                                   ex_step(exch, (90, 1690, 1780), (60, 1690, 1750))]),
        ]
        execution = NS(totalCycles=NS(total=1780), runs=runs)
    return NS(
        poplarVersion=NS(major=3, minor=3, point=0, packageHash="abc", string="3.3.0 (abc)"),
        version=NS(major=1, minor=0, point=0, isUnstableFormat=False),
        compilation=compilation,
        execution=execution,
    )


class FakePva:
    """Module-like object: ``openReport(profile[, debug])`` returns the tree and records the call."""

    def __init__(self, tree: NS | None = None, error: Exception | None = None) -> None:
        self.tree = tree if tree is not None else build_report_tree()
        self.error = error
        self.calls: list[tuple[str, ...]] = []

    def openReport(self, *paths: str) -> NS:
        self.calls.append(paths)
        if self.error is not None:
            raise self.error
        return self.tree
