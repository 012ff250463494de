"""``profcompare advise WORKLOAD``: search a workload's layout space on the simulator and say
which layout is fastest among those that fit (thin: the work is :func:`profcompare.advisor.run_advise`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from profcompare.backend.knobs import MAX_GLOBAL_BATCH, MAX_IPUS, MAX_LOCAL_WORKERS, MAX_SEARCH_POINTS, SEED_RANGE
from profcompare.commands._common import print_table, text_width
from profcompare.errors import WorkloadError


def parse_layout(text: str, option: str) -> dict[str, str]:
    """``variant=offchip-sharded,replicas=4`` -> {"variant": "offchip-sharded", "replicas": "4"};
    one-line WorkloadError naming ``option`` otherwise."""
    layout: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not value.strip():
            raise WorkloadError(f"bad {option} {text!r}: expected KNOB=VALUE,KNOB=VALUE (e.g. variant=onchip,replicas=4)")
        layout[name] = value.strip()
    return layout


def _assignments(texts: Sequence[str], option: str) -> dict[str, list[str]]:
    from profcompare.advisor.space import parse_assignment

    found: dict[str, list[str]] = {}
    for text in texts:
        name, values = parse_assignment(text, option)
        if name in found:
            raise WorkloadError(f"knob {name} given twice in {option}; give all its values at once")
        found[name] = values
    return found


class _Progress:
    """``advise: 12 of 96 points done`` on stderr (a terminal only), one line rewritten."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.total = 0
        self.done = 0

    def __call__(self, label: str, stage: str, info: Mapping[str, Any]) -> None:
        if not self.enabled:
            return
        if stage == "queued":
            self.total += 1
        elif stage == "done" and label != "*":
            self.done += 1
            click.echo(f"\radvise: {self.done} of {self.total} new points done", err=True, nl=False)

    def close(self) -> None:
        if self.enabled and self.done:
            click.echo("", err=True)


def guard_failure(asked: Any, option: str, *, on_front: bool) -> str | None:
    """The one-line failure of a ``--fail-if-not-...`` guard for its AskedLayout, or None when it passes."""
    wanted = ",".join(f"{k}={v}" for k, v in asked.wanted.items())
    if not asked.matches:
        return f"{option}: no evaluated layout has {wanted}"
    if (asked.on_front if on_front else asked.fits):
        return None
    what = "is on the Pareto front" if on_front else "fits"
    why = ""
    if not on_front and asked.first is not None and asked.first.reason:
        why = f"; {asked.first.label}: {asked.first.reason}"
    return f"{option}: no layout with {wanted} {what} ({asked.matches} evaluated{why})"


@click.command(name="advise")
@click.argument("workload", metavar="WORKLOAD")
@click.option("--ipus", type=click.IntRange(1, MAX_IPUS), default=None,
              help="IPUs of the machine [default: the workload's; mnist 4, the tutorial's; gpt 16].")
@click.option("--global-batch", "global_batch", type=click.IntRange(1, MAX_GLOBAL_BATCH), default=None,
              help="Samples per weight update, fixed for every layout [default: the workload's; mnist 256, gpt 16].")
@click.option("--size", default=None, help="A model-size preset of the workload (gpt: tiny, gptj-6b).")
@click.option("--set", "set_knobs", multiple=True, metavar="KNOB=V1,V2,...",
              help="Replace a knob's candidate values (any knob of the workload; repeatable), e.g. replicas=1,2.")
@click.option("--fix", "fix_knobs", multiple=True, metavar="KNOB=V",
              help="Fix a knob to one value (repeatable), e.g. variant=offchip-sharded or hidden=1024.")
@click.option("--budget-points", "budget", type=click.IntRange(1, MAX_SEARCH_POINTS), default=None,
              help="Points an NSGA-II search evaluates when the space has more than 200 [default: 100].")
@click.option("--seed", type=click.IntRange(*SEED_RANGE), default=0, show_default=True, help="Seed of the NSGA-II search.")
@click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, MAX_LOCAL_WORKERS),
              help="Points run in parallel, each on one of --jobs warm worker processes.")
@click.option("--dask", "dask", default=None, metavar="ADDRESS",
              help="Run the points as tasks on a Dask cluster: local:N (a LocalCluster of N worker processes here) "
              "or a scheduler address such as tcp://host:8786 (its workers need the same profcompare installed).")
@click.option("--out", default="reports", show_default=True, type=click.Path(file_okay=False),
              help="Output root (earlier advise runs in it are the point cache).")
@click.option("--name", default=None, help="Advise run directory name (default: timestamp + workload).")
@click.option("--force", is_flag=True, help="Replace an existing advise run of the same name.")
@click.option("--top", type=click.IntRange(min=1), default=None, help="Front rows printed [default: all].")
@click.option("--report-pages", "report_pages", type=click.IntRange(0, MAX_SEARCH_POINTS), default=5, show_default=True,
              help="Front points that get a full report page (report.html) linked from advise.html.")
@click.option("--fail-if-not-fits", "fail_not_fits", multiple=True, metavar="KNOB=V,...",
              help="Exit 1 unless some evaluated layout with these knob values fits (CI guard; repeatable).")
@click.option("--fail-if-not-front", "fail_not_front", multiple=True, metavar="KNOB=V,...",
              help="Exit 1 unless some layout with these knob values is on the Pareto front (repeatable).")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@click.pass_context
def command(ctx: click.Context, workload: str, ipus: int | None, global_batch: int | None, size: str | None,
            set_knobs: tuple[str, ...], fix_knobs: tuple[str, ...], budget: int | None, seed: int, jobs: int, dask: str | None,
            out: str,
            name: str | None, force: bool, top: int | None, report_pages: int, fail_not_fits: tuple[str, ...],
            fail_not_front: tuple[str, ...], quiet: bool) -> None:
    """Search WORKLOAD's layout space on the simulator (compile only) and name the fastest layout that fits.

    Every point (variant + knob values) runs as a compile-only job into OUT/NAME/POINT/, a normal run
    directory; points an earlier advise run in OUT already ran with the same full config are reused.
    Spaces of at most 200 valid points are searched exhaustively, larger ones by NSGA-II (Optuna) within
    --budget-points. Writes advise.json, advise.csv and advise.html; prints the verdict and the Pareto
    front of samples per second against the fullest tile. Invalid combinations are pruned before anything
    runs, each with a reason.
    """
    from profcompare.advisor import run_advise
    from profcompare.commands.pages import advise_pages
    from profcompare.commands.run import display_path, refuse_existing_run
    from profcompare.render.advise import front_table
    from profcompare.render.control_chars import one_line
    from profcompare.render.table_fit import wrap_text

    set_values = _assignments(set_knobs, "--set")
    fixed_lists = _assignments(fix_knobs, "--fix")
    for knob, values in fixed_lists.items():
        if len(values) != 1:
            raise WorkloadError(f"bad --fix {knob}={','.join(values)}: one value only (use --set for several)")
    fixed = {k: v[0] for k, v in fixed_lists.items()}
    guards = [(parse_layout(t, "--fail-if-not-fits"), "--fail-if-not-fits", False) for t in fail_not_fits]
    guards += [(parse_layout(t, "--fail-if-not-front"), "--fail-if-not-front", True) for t in fail_not_front]
    if dask is not None and dask.strip():
        from profcompare.runner.dask_engine import parse_dask_address

        parse_dask_address(dask, jobs)  # a bad address or worker count fails before the space is expanded
    refuse_existing_run(out, name, force)

    def check_space(space: Any) -> None:
        for layout, option, _ in guards:
            for knob in layout:
                if knob not in space.searched:
                    raise WorkloadError(f"bad {option}: {knob} is not a searched knob; searched: {', '.join(space.searched)}")
        if not quiet:
            valid, pruned = len(space.valid), len(space.candidates) - len(space.valid)
            click.echo(f"advise {space.workload}: {valid} layouts to evaluate on {space.context.ipus} IPU(s), global "
                       f"batch {space.context.global_batch} ({pruned} pruned); simulator, compile only", err=True)

    import sys

    progress = _Progress(enabled=not quiet and sys.stderr is not None and sys.stderr.isatty())
    try:
        result = run_advise(workload, ipus=ipus, global_batch=global_batch, set_values=set_values, fixed=fixed,
                            size=size, budget=budget, seed=seed, jobs=jobs, dask=dask, out=out, name=name, force=force,
                            report_pages=report_pages, progress=progress, on_space=check_space,
                            asked=[layout for layout, _, _ in guards], pages=advise_pages())
    finally:
        progress.close()
    width = text_width()
    click.echo("Verdict")
    from profcompare.render.advise_words import advise_sentences

    headline = result.space_headline
    for sentence in advise_sentences(result.facts, headline):
        click.echo("\n".join(wrap_text(one_line(sentence), width, first="- ", rest="  ")))
    click.echo("")
    click.echo("Pareto front (fastest first; bytes per replica)")
    print_table(front_table(result.points, headline, top))
    cut = len(result.front) - (top if top is not None else len(result.front))
    if cut > 0:
        click.echo(f"--top {top}: {cut} more layout{'s' if cut != 1 else ''} on the front in advise.html and advise.csv")
    click.echo(f"\nadvise written to {display_path(result.directory)}/" + ("  (replaced the previous run)" if result.replaced else ""))
    for fmt, path in result.files.items():
        click.echo(f"  {fmt:<5} {display_path(path)}")
    click.echo(f"  ({result.facts.new} points run, {result.facts.cached} reused, {result.wall_seconds:.1f} s wall)")
    failures = [line for (_, option, on_front), asked in zip(guards, result.facts.asked)
                if (line := guard_failure(asked, option, on_front=on_front)) is not None]
    for line in failures:
        click.echo(f"profcompare: {one_line(line)}", err=True)
    if failures:
        ctx.exit(1)


__all__ = ["command", "guard_failure", "parse_layout"]
