"""Fuzz the store reader: damage a valid report N times and count what reading it does.

    python benchmarks/fuzz_reports.py --n 10000 [--seed 1]

Each input is one mutation of a valid store (bit flips, truncation, SQL edits of values and
of the catalogue, value edits with fresh checksums, deeply nested meta; see
tests/readers/store_mutations.py). Reading must either refuse it with a ProfcompareError
("rejected") or return a report that passes validation and renders ("accepted"). Anything else
is a "crash", printed with its first examples; the script exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import random
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "readers"))

from readers_builders import build_report  # noqa: E402
from store_mutations import MUTATIONS, classify  # noqa: E402

from profcompare.readers import store  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="number of damaged inputs")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    crashes: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        pristine = store.write_report(build_report(), pathlib.Path(tmp) / "pristine.sqlite")
        damaged = pathlib.Path(tmp) / "damaged.sqlite"
        for _ in range(args.n):
            mutation = rng.choice(MUTATIONS)
            kind = mutation(pristine, damaged, random.Random(rng.getrandbits(64)))
            outcome = classify(damaged)
            counts[(kind, "crash" if outcome.startswith("crash") else outcome)] += 1
            if outcome.startswith("crash") and len(crashes) < 10:
                crashes.append(f"{kind}: {outcome}")
            damaged.unlink(missing_ok=True)
    elapsed = time.perf_counter() - started
    print(f"{args.n} damaged stores in {elapsed:.1f} s (seed {args.seed})")
    print(f"{'mutation':<22}{'rejected':>10}{'accepted':>10}{'crash':>8}")
    for kind in sorted({k for k, _ in counts}):
        print(f"{kind:<22}{counts[(kind, 'rejected')]:>10}{counts[(kind, 'accepted')]:>10}{counts[(kind, 'crash')]:>8}")
    total = {o: sum(v for (k, oo), v in counts.items() if oo == o) for o in ("rejected", "accepted", "crash")}
    print(f"{'total':<22}{total['rejected']:>10}{total['accepted']:>10}{total['crash']:>8}")
    for line in crashes:
        print("  " + line)
    return 1 if total["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
