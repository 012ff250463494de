"""``profcompare sweep VARIANT --param NAME=V1,V2,...``: run one variant over a grid of knob values."""

from __future__ import annotations

from typing import Any

import click

from profcompare.commands._common import addons_environment, addons_option, compile_only_option, execution_note, execution_of
from profcompare.commands.run import (
    KnobCommand,
    ProgressDisplay,
    backend_note,
    collect_overrides,
    common_run_options,
    display_path,
    echo_failures,
    knob_options,
    refuse_existing_run,
)
from profcompare.commands._common import print_table


def sweep_table(result: Any) -> Any:
    """A :class:`~profcompare.render.sections.Table` of a sweep: one row per point with the swept
    knobs, status and metrics."""
    from profcompare.render.format import SWEEP_METRIC_FORMATS, metric_label
    from profcompare.render.sections import Cell, Column, Table

    # headers spelled as every other summary (metric_label); the fitted table wraps them
    columns = [(metric, metric_label(metric), fmt) for metric, fmt in SWEEP_METRIC_FORMATS]
    header = (*(Column(knob, True) for knob in result.swept), Column("status"),
              *(Column(title, True) for _, title, _ in columns))
    tones = {"ok": "good", "oom": "bad", "failed": "bad"}
    rows = []
    for record in result.table.to_dict(orient="records"):
        status = str(record["status"])
        rows.append((
            *(Cell(str(record[k])) for k in result.swept),
            Cell(status, tone=tones.get(status, "bad")),
            *(Cell(fmt(record[metric])) for metric, _, fmt in columns),
        ))
    return Table.of(header, tuple(rows))


@click.command(name="sweep", cls=KnobCommand)
@click.argument("variant", metavar="VARIANT")
@click.option(
    "--param",
    "params",
    multiple=True,
    required=True,
    metavar="NAME=V1,V2,...",
    help="A knob and the values to try (repeat for a grid), e.g. sharded_threshold=1e10,262145,1024,512.",
)
@click.option(
    "--dask",
    "dask",
    default=None,
    metavar="ADDRESS",
    help="Run the points as tasks on a Dask cluster: local:N (a LocalCluster of N worker processes here) or a "
    "scheduler address such as tcp://host:8786 (its workers need the same profcompare installed). Default: a "
    "pool of --jobs warm worker processes on this machine.",
)
@knob_options
@common_run_options
@addons_option
@compile_only_option
@click.pass_context
def command(
    ctx: click.Context,
    variant: str,
    params: tuple[str, ...],
    backend: str,
    workload: str | None,
    addons: str | None,
    compile_only: bool,
    out: str,
    name: str | None,
    jobs: int,
    force: bool,
    quiet: bool,
    dask: str | None,
    set_knobs: tuple[str, ...],
    **knobs: Any,
) -> None:
    """Run VARIANT at every point of a grid of knob values and tabulate memory and throughput.

    The points run in --jobs warm worker processes (each imports profcompare once and runs point
    after point), or with --dask as tasks on a Dask cluster, into OUT/NAME/POINT/; the table (one row per
    point: the swept knobs, always-live, not-always-live peak, code and Streaming Memory bytes,
    cycles per step, samples per second) is printed and written as OUT/NAME/sweep.csv, sweep.json
    and sweep.html (with a plot). The exit code is 1 when a point failed or ran out of memory.
    """
    from profcompare import runner
    from profcompare.runner import sweep

    overrides = collect_overrides(knobs, set_knobs)
    parsed = [sweep.parse_param(p) for p in params]
    points = sweep.expand_grid(variant, parsed, overrides, workload)  # validate before anything runs
    refuse_existing_run(out, name, force)
    resolved = runner.resolve_backend(backend)
    child_environ = addons_environment(addons, resolved)
    execution = execution_of(compile_only, resolved)
    # a bad --dask address fails here, before anything runs; the workers end with the command
    engine = ctx.with_resource(runner.make_engine(jobs, dask))
    if not quiet:
        click.echo(backend_note(backend, resolved), err=True)
        if execution_note(execution):
            click.echo(execution_note(execution), err=True)
        click.echo(f"sweep: {variant}, {len(points)} point(s) on a {engine.description}", err=True)
    from profcompare.commands.pages import write_sweep_files

    with ProgressDisplay([p.job.label for p in points], enabled=not quiet, finalize_text="tabulating") as display:
        result = sweep.run_sweep(
            variant,
            parsed,
            overrides=overrides,
            workload=workload,
            backend=resolved,
            out=out,
            name=name,
            jobs=jobs,
            force=force,
            progress=display,
            environ=child_environ,
            execution=execution,
            engine=engine,
            pages=write_sweep_files,
        )
    print_table(sweep_table(result))
    click.echo(f"\nsweep written to {display_path(result.run.directory)}/" + ("  (replaced the previous run)" if result.run.replaced else ""))
    for fmt, path in result.files.items():
        click.echo(f"  {fmt:<5} {display_path(path)}")
    click.echo(f"  (backend {result.run.backend}, {result.run.wall_seconds:.1f} s wall)")
    if not result.ok:
        echo_failures(result.run)
        ctx.exit(1)


__all__ = ["command", "sweep_table"]
