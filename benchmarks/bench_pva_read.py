"""Time reading a big Poplar profile through the pva reader, part by part.

    python benchmarks/bench_pva_read.py [--programs 10000] [--tiles 1472] [--repeat 3]

The profile is a stand-in pva object tree shaped as reference/pva.md documents (tiles with
memory categories, liveness steps, programs with per-tile ``controlCodeByTile`` and
``codeBytesByTile``, an execution profile with ``activeCycles`` intervals), sized like a large
model: by default 10^4 programs x 1,472 tiles. It prints the median seconds per part (tiles,
liveness, code, execution) with and without the per-program code (``read_pva(code=False)``,
``show --no-code``), so the cost of the code walk is visible.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time
from types import SimpleNamespace as NS

from profcompare.readers.pva import read_pva

_CATEGORIES = ("vertexCode", "controlCode", "internalExchangeCode", "vertexInstanceState", "copyDescriptor",
               "variable", "constant", "stack", "controlId", "controlTable", "message")


def build_tree(programs: int, tiles: int) -> NS:
    """A pva-shaped report: ``programs`` programs over ``tiles`` tiles (one IPU)."""
    tile_list = [
        NS(memory=NS(total=NS(includingGaps=400_000, excludingGaps=380_000), alwaysLiveBytes=200_000,
                     notAlwaysLiveBytes=150_000, overflowed=NS(includingGaps=0, excludingGaps=0),
                     category=NS(**{c: NS(total=1_000 + i) for i, c in enumerate(_CATEGORIES)})))
        for _ in range(tiles)
    ]
    per_tile = [64] * tiles
    kinds = ("OnTileExecute", "DoExchange", "StreamCopyMid", "Sync")
    program_list = []
    for p in range(programs):
        ptype = kinds[p % len(kinds)]
        attrs = {"name": f"prog{p}", "type": NS(name=ptype), "children": [], "controlCodeByTile": per_tile}
        if ptype in ("DoExchange", "StreamCopyMid"):
            attrs["codeBytesByTile"] = per_tile
        program_list.append(NS(**attrs))
    steps = [NS(program=program_list[p], notAlwaysLiveMemory=NS(bytes=1000 + p, variables=[NS(name=f"t{p}", size=1000 + p)]))
             for p in range(programs)]
    exec_steps = [NS(program=program_list[p], ipus=[NS(cycles=100, activeCycles=NS(cyclesFrom=NS(min=100 * p, max=100 * p),
                                                                                     cyclesTo=NS(min=100 * p + 100, max=100 * p + 100)))])
                  for p in range(programs)]
    return NS(
        poplarVersion=NS(string="3.4.0 (bench)"),
        compilation=NS(
            target=NS(numIPUs=1, tilesPerIpu=tiles, bytesPerTile=638_976, clockFrequency=1.33e9, numReplicas=1,
                      ipusPerReplica=1, architecture=NS(name="Ipu2")),
            tiles=tile_list, livenessProgramSteps=steps, alwaysLiveVariables=[NS(name="w", size=4)], programs=program_list,
        ),
        execution=NS(totalCycles=NS(total=100 * programs), runs=[NS(name="r", steps=exec_steps)]),
    )


class _Pva:
    def __init__(self, tree: NS) -> None:
        self.tree = tree

    def openReport(self, *paths: str) -> NS:  # noqa: N802 - pva's name
        return self.tree


def timed_read(tree: NS, profile: pathlib.Path, code: bool) -> dict[str, float]:
    """Seconds per part of one read (the progress callback marks where each part starts)."""
    marks: list[tuple[str, float]] = []

    def tell(part: str, done: int, total: int) -> None:
        if not marks or marks[-1][0] != part:
            marks.append((part, time.perf_counter()))

    start = time.perf_counter()
    read_pva(profile, pva_module=_Pva(tree), code=code, progress=tell)
    end = time.perf_counter()
    bounds = [*marks, ("end", end)]
    parts = {name: bounds[i + 1][1] - t for i, (name, t) in enumerate(marks)}
    parts["total"] = end - start
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=10_000)
    parser.add_argument("--tiles", type=int, default=1472)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    t0 = time.perf_counter()
    tree = build_tree(args.programs, args.tiles)
    print(f"stand-in profile: {args.programs:,} programs x {args.tiles:,} tiles (built in {time.perf_counter() - t0:.1f} s)")
    with tempfile.TemporaryDirectory() as tmp:
        profile = pathlib.Path(tmp) / "profile.pop"
        profile.write_bytes(b"SQLite format 3\x00")
        for code in (True, False):
            runs = [timed_read(tree, profile, code) for _ in range(args.repeat)]
            parts = [p for p in runs[0] if p != "total"] + ["total"]
            medians = {p: statistics.median(r.get(p, 0.0) for r in runs) for p in parts}
            label = "with code   " if code else "--no-code   "
            print(label + "  ".join(f"{p} {medians[p]:.2f} s" for p in parts) + f"  (median of {args.repeat})")


if __name__ == "__main__":
    main()
