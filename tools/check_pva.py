"""Check the pva attributes profcompare reads, on a machine with the Poplar SDK.

    python tools/check_pva.py path/to/profile.pop [path/to/debug.cbor]

Prints each attribute the reader relies on with its value or MISSING, the memory categories
the tiles expose, the run span against the sum of step cycles, then reads the profile with
profcompare's reader and prints its summary. Exit code 1 if a relied-on attribute is missing.
"""

from __future__ import annotations

import sys
from typing import Any


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if part.endswith("]"):
            name, index = part[:-1].split("[")
            obj = list(getattr(obj, name))[int(index)]
        else:
            obj = getattr(obj, part)
    return obj


CHECKS = (
    "poplarVersion.string",
    "compilation.target.numIPUs", "compilation.target.tilesPerIpu", "compilation.target.bytesPerTile",
    "compilation.target.clockFrequency", "compilation.target.numReplicas", "compilation.target.ipusPerReplica",
    "compilation.target.architecture.name",
    "compilation.tiles[0].memory.total.includingGaps", "compilation.tiles[0].memory.total.excludingGaps",
    "compilation.tiles[0].memory.alwaysLiveBytes", "compilation.tiles[0].memory.notAlwaysLiveBytes",
    "compilation.tiles[0].memory.overflowed.includingGaps",
    "compilation.livenessProgramSteps[0].program.name", "compilation.livenessProgramSteps[0].program.type.name",
    "compilation.livenessProgramSteps[0].notAlwaysLiveMemory.bytes",
    "compilation.programs[0].name", "compilation.programs[0].controlCodeByTile",
    "execution.totalCycles.total",
    "execution.runs[0].steps[0].program.name", "execution.runs[0].steps[0].ipus[0].cycles",
    "execution.runs[0].steps[0].ipus[0].activeCycles.cyclesFrom.min",
    "execution.runs[0].steps[0].ipus[0].activeCycles.cyclesTo.max",
)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    import pva  # type: ignore[import-not-found]

    from profcompare.readers.pva import category_names, read_pva

    report = pva.openReport(*argv[:2])
    missing = 0
    for path in CHECKS:
        try:
            value = _get(report, path)
            shown = f"list of {len(list(value))}" if hasattr(value, "__iter__") and not isinstance(value, str) else repr(value)
        except (AttributeError, IndexError, RuntimeError) as exc:
            shown, missing = f"MISSING ({type(exc).__name__}: {exc})", missing + 1
        print(f"{path:70s} {shown}")
    print("memory categories:", ", ".join(category_names(report.compilation.tiles[0].memory.category)))
    runs = list(report.execution.runs)
    if runs:
        steps = [s for s in runs[0].steps if list(s.ipus)]
        try:
            starts = [min(i.activeCycles.cyclesFrom.min for i in s.ipus) for s in steps]
            ends = [max(i.activeCycles.cyclesTo.max for i in s.ipus) for s in steps]
            total = sum(max(i.cycles for i in s.ipus) for s in steps)
            print(f"run 0: span {max(ends) - min(starts):,} cycles; sum of step cycles {total:,}")
        except (AttributeError, RuntimeError, ValueError) as exc:
            print(f"run 0: no step intervals ({type(exc).__name__}: {exc})")
    ours = read_pva(argv[0], argv[1] if len(argv) > 1 else None)
    print(repr(ours.summary()))  # readable figures: no scientific notation for seconds
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
