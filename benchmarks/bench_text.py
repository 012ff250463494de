"""Terminal text benchmark: fitting and drawing a long variables table.

Usage::

    python benchmarks/bench_text.py [--rows 20000] [--repeat 3]

Builds a table shaped like ``profcompare compare --top N``'s variables table (long graph names,
kind, figures, status, match) with ``--rows`` rows and prints, for widths 80, 200 and unbounded
(a file), the median time of :func:`profcompare.render.table_fit.fit_table` (the layout) and of
:func:`profcompare.render.text.render_document` (layout and drawing, without and with colour),
with the columns left out at each width.
"""

from __future__ import annotations

import argparse
import statistics
import time

from profcompare.render.sections import Cell, Column, Document, Section, Table
from profcompare.render.table_fit import fit_table
from profcompare.render.text import render_document


def _table(rows: int) -> Table:
    columns = (Column("Variable"), Column("Kind"), Column("Base", True), Column("New", True), Column("Delta", True),
               Column("Delta %", True), Column("Status"), Column("Match"))
    body = tuple(
        (Cell(f"Net_subgraph({i % 7})/layer{i}/fc{i % 4}.weight_sharded_slice_all_gathered@{i}"),
         Cell("optimizer_state"), Cell(f"{i * 1.7:.1f} KiB"), Cell(f"{i * 1.9:.1f} KiB"),
         Cell(f"+{i * 0.2:.1f} KiB", "bad"), Cell("+11.8%"), Cell("grew", "bad"), Cell("by parameter and role"))
        for i in range(rows)
    )
    return Table(columns, body)


def _median(repeat: int, work) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    table = _table(args.rows)
    document = Document("bench", (), (), (Section("Variables", table),))
    print(f"{args.rows:,} rows, median of {args.repeat}")
    for width in (80, 200, None):
        fit = _median(args.repeat, lambda w=width: fit_table(table, w))
        plain = _median(args.repeat, lambda w=width: render_document(document, width=w))
        colour = _median(args.repeat, lambda w=width: render_document(document, width=w, color=True))
        dropped = ", ".join(fit_table(table, width).dropped) or "none"
        print(f"width {str(width or 'unbounded'):>9}: fit {fit:6.2f} s, text {plain:6.2f} s, "
              f"coloured {colour:6.2f} s; left out: {dropped}")


if __name__ == "__main__":
    main()
