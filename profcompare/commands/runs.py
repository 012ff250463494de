"""``profcompare runs``: the runs under the output root, with their variants and status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click


def _when(started: str | None) -> str:
    """``2026-11-22T10:15:00+01:00`` -> ``2026-11-22 10:15:00`` (the run's local time)."""
    return (started or "")[:19].replace("T", " ")


def _job_status_text(info: Mapping[str, Any]) -> str:
    """A job's status as ``runs`` shows it: ok, oom or failed, else ``unknown status`` and what run.json holds."""
    from profcompare.runner import job_status

    status = job_status(info)
    if status != "unknown":
        return status
    raw = info.get("status")
    return "unknown status" if raw is None else f"unknown status {raw!r}"


@click.command(name="runs")
@click.option("--out", default="reports", show_default=True, type=click.Path(file_okay=False), help="Output root to list.")
def command(out: str) -> None:
    """List the runs (and sweeps) under OUT: variants with their status, backend (", compile only"
    for runs made with --compile-only) and start time.

    Directories of runs still in progress are hidden and not listed; leftovers of killed runs are
    counted in a note (the next run of any name removes them). A job whose run.json holds no valid
    status shows as unknown, never ok; every name and field is shown on one line with control
    characters made visible.
    """
    from pathlib import Path

    from profcompare.commands._common import print_table
    from profcompare.render.control_chars import one_line
    from profcompare.render.sections import Cell, Column, Table
    from profcompare.runner import job_status, leftover_staging, list_runs

    runs = list_runs(out)
    leftovers = leftover_staging(Path(out))
    note = (f"{len(leftovers)} leftover staging director{'y' if len(leftovers) == 1 else 'ies'} of killed runs "
            f"under {one_line(out)} (hidden; the next run removes them)") if leftovers else ""
    if not runs:
        click.echo(f"no runs under {one_line(out)}")
        if note:
            click.echo(note)
        return
    tones = {"ok": "good", "oom": "bad", "failed": "bad", "incomplete": "muted"}
    rows = []
    for run in runs:
        not_ok = [f"{label} ({_job_status_text(info)})" for label, info in run.jobs if job_status(info) != "ok"]
        if run.kind == "advise":  # oom points are findings of the search, counted rather than listed
            variants = f"{', '.join(run.variants)}: {len(run.jobs)} points" + (f", {len(not_ok)} not ok" if not_ok else "")
        elif run.kind == "sweep":
            over = f" over {', '.join(run.swept)}" if run.swept else ""
            variants = f"{', '.join(run.variants)}: {len(run.jobs)} points{over}"
            if not_ok:
                variants += "; " + ", ".join(not_ok)
        else:
            variants = ", ".join(
                label if job_status(info) == "ok" else f"{label} ({_job_status_text(info)})" for label, info in run.jobs
            )
        backend = run.backend + (", compile only" if any(info.get("execution") == "compile-only"
                                                         for _, info in run.jobs) else "")
        rows.append((Cell(one_line(run.name)), Cell(one_line(run.kind)),
                     Cell(one_line(run.status), tone=tones.get(run.status, "bad")), Cell(one_line(variants)),
                     Cell(one_line(backend)), Cell(one_line(_when(run.started)))))
    print_table(Table.of(tuple(Column(c) for c in ("run", "kind", "status", "variants", "backend", "started")),
                         tuple(rows)))
    if note:
        click.echo(note)


__all__ = ["command"]
