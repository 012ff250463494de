"""``profcompare runs``: the runs under the output root, with their variants and status."""

from __future__ import annotations

import click


def _when(started: str | None) -> str:
    """``2026-11-22T10:15:00+01:00`` -> ``2026-11-22 10:15:00`` (the run's local time)."""
    return (started or "")[:19].replace("T", " ")


@click.command(name="runs")
@click.option("--out", default="reports", show_default=True, type=click.Path(file_okay=False), help="Output root to list.")
def command(out: str) -> None:
    """List the runs (and sweeps) under OUT: variants with their status, backend and start time.

    Directories of runs still in progress are hidden and not listed; leftovers of killed runs are
    counted in a note (the next run of any name removes them).
    """
    from pathlib import Path

    from profcompare.commands._common import print_table
    from profcompare.render.sections import Cell, Column, Table
    from profcompare.runner import leftover_staging, list_runs

    runs = list_runs(out)
    leftovers = leftover_staging(Path(out))
    note = (f"{len(leftovers)} leftover staging director{'y' if len(leftovers) == 1 else 'ies'} of killed runs "
            f"under {out} (hidden; the next run removes them)") if leftovers else ""
    if not runs:
        click.echo(f"no runs under {out}")
        if note:
            click.echo(note)
        return
    tones = {"ok": "good", "oom": "bad", "failed": "bad"}
    rows = []
    for run in runs:
        not_ok = [f"{label} ({info.get('status', 'failed')})" for label, info in run.jobs if info.get("status") != "ok"]
        if run.kind == "sweep":
            over = f" over {', '.join(run.swept)}" if run.swept else ""
            variants = f"{', '.join(run.variants)}: {len(run.jobs)} points{over}"
            if not_ok:
                variants += "; " + ", ".join(not_ok)
        else:
            variants = ", ".join(
                label if info.get("status") == "ok" else f"{label} ({info.get('status', 'failed')})"
                for label, info in run.jobs
            )
        rows.append((Cell(run.name), Cell(run.kind), Cell(run.status, tones.get(run.status, "bad")), Cell(variants),
                     Cell(run.backend), Cell(_when(run.started))))
    print_table(Table(tuple(Column(c) for c in ("run", "kind", "status", "variants", "backend", "started")), tuple(rows)))
    if note:
        click.echo(note)


__all__ = ["command"]
