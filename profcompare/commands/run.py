"""``profcompare run VARIANT...``: build and run workload variants with autoReport, then compare them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from profcompare.backend.knobs import MAX_LOCAL_WORKERS
from profcompare.commands._common import (
    BRIEF,
    FULL,
    addons_environment,
    addons_option,
    compile_only_option,
    display_path,
    execution_note,
    execution_of,
    print_table,
    stdout_is_tty,
    text_style,
    text_view,
    text_width,
    top_option,
    view_options,
)
from profcompare.errors import WorkloadError

F = TypeVar("F", bound=Callable[..., Any])

_METAVARS = {int: "N", float: "X", str: "TEXT"}


def _knob_params() -> tuple[list[click.Option], str, dict[str, tuple[str, ...]], tuple[str, ...]]:
    """Options for every knob the workloads declare (one per knob name), an epilog listing the
    variants, the workloads declaring each knob (by option name) and every workload's name;
    values are parsed by the workload's knob types later, so they stay text here."""
    from profcompare import runner

    options: dict[str, click.Option] = {}
    lines = []
    declared: dict[str, list[tuple[str, Any]]] = {}  # knob name -> (workload, knob) of each declaring it
    workloads = tuple(runner.workload_registry().list_workloads())
    for workload in workloads:
        lines.append(f"{workload.name}: " + ", ".join(workload.variants))
        for knob in workload.knobs:
            declared.setdefault(knob.name, []).append((workload.name, knob))
    for name, owners in declared.items():
        knob = owners[0][1]
        metavar = "DIR" if knob.path else "|".join(map(str, knob.choices)) if knob.choices else _METAVARS.get(knob.type, "VALUE")

        def described(k: Any) -> str:
            default = f"{k.default!r}" if isinstance(k.default, str) else f"{k.default:g}" if isinstance(k.default, float) else str(k.default)
            return k.help.rstrip(".") + f" [default: {default}]"

        # a knob several workloads declare says what it means, and its default, for each
        text = described(knob) if len(owners) == 1 else "; ".join(f"{w}: {described(k)}" for w, k in owners)
        options[name] = click.Option([f"--{name.replace('_', '-')}", name], default=None, metavar=metavar, help=text)
    epilog = "\b\nVariants (workload: variants):\n" + "\n".join(f"  {line}" for line in lines)
    owners_by_name = {name: tuple(w for w, _ in owners) for name, owners in declared.items()}
    return list(options.values()), epilog, owners_by_name, tuple(w.name for w in workloads)


#: the heading of the options that are not knobs, in ``--help``
COMMON_HEADING = "Options"
#: the heading of the knobs every workload declares (and of ``--set``)
SHARED_HEADING = "Knobs of every workload (what each means, per workload)"


def knob_heading(owners: Sequence[str], workloads: Sequence[str]) -> str:
    """The ``--help`` heading of the knobs declared by exactly the workloads ``owners``."""
    if len(owners) == len(workloads) and len(workloads) > 1:
        return SHARED_HEADING
    if len(owners) == 1:
        return f"{owners[0]} knobs"
    return "Knobs of " + " and ".join(owners)


class KnobCommand(click.Command):
    """A command whose knob options are generated from each workload's declared knobs.

    The options are built when the command is used (parsing or ``--help``), from the registry
    as it is then, so a new workload needs no CLI change and ``profcompare --help`` does not
    import the workloads. ``--help`` lists them under one heading per workload (knobs every
    workload declares, and ``--set``, under one heading of their own), after the command's own
    options.
    """

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        base = getattr(self, "_base_params", None)
        if base is None:
            base = self._base_params = list(self.params)
        options, epilog, self._knob_owners, self._workload_names = _knob_params()
        position = next((i for i, p in enumerate(base) if p.name == "set_knobs"), len(base))
        self.params = [*base[:position], *options, *base[position:]]
        self.epilog = epilog
        return super().get_params(ctx)

    def option_groups(self, ctx: click.Context) -> list[tuple[str, list[click.Parameter]]]:
        """The options of ``--help`` by heading, in the order shown: the command's own options,
        the knobs every workload declares (with ``--set``), then each workload's own knobs."""
        params = [p for p in self.get_params(ctx) if isinstance(p, click.Option)]
        owners, workloads = self._knob_owners, self._workload_names
        headings = [COMMON_HEADING, SHARED_HEADING]
        groups: dict[str, list[click.Parameter]] = {COMMON_HEADING: [], SHARED_HEADING: []}
        for param in params:
            if param.name in owners:
                heading = knob_heading(owners[param.name], workloads)
            elif param.name == "set_knobs":
                heading = SHARED_HEADING
            else:
                heading = COMMON_HEADING
            if heading not in groups:
                groups[heading] = []
                headings.append(heading)
            groups[heading].append(param)
        # the workloads' own groups in the registry's order, after the shared ones
        order = {knob_heading((w,), workloads): i for i, w in enumerate(workloads)}
        headings[2:] = sorted(headings[2:], key=lambda h: order.get(h, len(order)))
        return [(h, groups[h]) for h in headings if groups[h]]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for heading, params in self.option_groups(ctx):
            records = [record for p in params if (record := p.get_help_record(ctx)) is not None]
            if records:
                with formatter.section(heading):
                    formatter.write_dl(records)


def knob_options(func: F) -> F:
    """Add ``--set NAME=VALUE`` to a click command (use ``cls=KnobCommand`` for the per-knob options)."""
    return click.option(
        "--set",
        "set_knobs",
        multiple=True,
        metavar="NAME=VALUE",
        help="Set any knob of the workload (repeatable); see `profcompare workloads`.",
    )(func)


def collect_overrides(kwargs: Mapping[str, Any], set_knobs: Sequence[str] = ()) -> dict[str, Any]:
    """The knob values given on the command line (text), keyed by knob name: every keyword not
    given is None; ``--set NAME=VALUE`` items come last."""
    overrides = {knob: value for knob, value in kwargs.items() if value is not None}
    for item in set_knobs:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise WorkloadError(f"bad --set {item!r}: expected NAME=VALUE")
        overrides[name.strip().replace("-", "_")] = value
    return overrides


def refuse_existing_run(out: str, name: str | None, force: bool) -> None:
    """Refuse (OutputExistsError, WorkloadError for a bad name) a ``--name`` whose run directory
    exists without ``--force``, before any progress is drawn or any variant starts; the runner
    checks again when it publishes (another run may take the name meanwhile)."""
    import os

    from profcompare.errors import OutputExistsError
    from profcompare.runner import check_run_name

    if name is None:
        return
    check_run_name(name)
    final = Path(out) / name
    if not force and os.path.lexists(final):
        raise OutputExistsError(f"run directory {final} already exists (use --force to replace it, or --name)")


def common_run_options(func: F) -> F:
    """Options ``run`` and ``sweep`` share besides the knobs."""
    for decorator in reversed(
        [
            click.option(
                "--backend",
                type=click.Choice(["auto", "sdk", "sim"]),
                default="auto",
                show_default=True,
                help="auto = the Poplar SDK when importable, else the embedded simulator.",
            ),
            click.option(
                "--workload",
                default=None,
                metavar="NAME",
                help="Find the variants in this workload only (default: by name across the workloads; "
                     "see `profcompare workloads`).",
            ),
            click.option("--out", default="reports", show_default=True, type=click.Path(file_okay=False), help="Output root."),
            click.option("--name", default=None, help="Run directory name (default: timestamp + what runs)."),
            click.option("--jobs", "-j", default=1, show_default=True, type=click.IntRange(1, MAX_LOCAL_WORKERS), help="Jobs to run in parallel: `run` starts a subprocess per variant, `sweep` keeps that many warm "
                         "worker processes."),
            click.option("--force", is_flag=True, help="Replace an existing run directory of the same name."),
            click.option("--quiet", "-q", is_flag=True, help="No progress display."),
        ]
    ):
        func = decorator(func)
    return func


# --------------------------------------------------------------------------------------------
# progress display

_STATUS_STYLE = {"ok": "green", "oom": "bold red", "failed": "bold red"}
#: the same statuses as table cell tones
_STATUS_TONE = {"ok": "good", "oom": "bad", "failed": "bad"}


class ProgressDisplay:
    """A rich progress display with one line per job (stage, elapsed time); inert when disabled."""

    def __init__(self, labels: Sequence[str], *, enabled: bool = True, finalize_text: str = "comparing") -> None:
        self._enabled = enabled
        self._finalize_text = finalize_text
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._labels = list(labels)

    def __enter__(self) -> ProgressDisplay:  # noqa: PYI034
        if not self._enabled:
            return self
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column

        width = max(len(label) for label in [*self._labels, self._finalize_text])
        # labels and times are never squeezed: a long error in the stage column wraps instead
        self._progress = Progress(
            SpinnerColumn(finished_text="[dim]-[/]", table_column=Column(no_wrap=True)),
            TextColumn(f"{{task.description:<{width}}}", table_column=Column(min_width=width, no_wrap=True)),
            TextColumn("{task.fields[stage]}", table_column=Column(overflow="fold")),
            TimeElapsedColumn(table_column=Column(no_wrap=True)),
            console=Console(stderr=True),
            transient=False,
        )
        self._progress.__enter__()
        for label in self._labels:
            self._tasks[label] = self._progress.add_task(escape_field(label), total=1, start=False, stage="[dim]queued[/]")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def __call__(self, label: str, stage: str, info: Mapping[str, Any]) -> None:
        """Progress callback for :func:`profcompare.runner.execute_jobs`."""
        from profcompare.runner import FINALIZE_LABEL

        if self._progress is None:
            return
        if label == FINALIZE_LABEL and label not in self._tasks:
            self._tasks[label] = self._progress.add_task(self._finalize_text, total=1, stage="writing outputs")
        if label not in self._tasks:
            return
        task = self._tasks[label]
        if stage == "queued":
            return
        if stage == "done" and label == FINALIZE_LABEL:
            self._progress.update(task, stage="[green]done[/]", completed=1)
            self._progress.stop_task(task)
            return
        if stage == "done":
            status = str(info.get("status", "failed"))
            text = f"[{_STATUS_STYLE.get(status, 'red')}]{escape_field(status)}[/]"
            if info.get("error"):
                text += f" [dim]{escape_field(failure_line(str(info['error']))[:100])}[/]"
            self._progress.update(task, stage=text, completed=1)
            self._progress.stop_task(task)
            return
        self._progress.start_task(task)
        self._progress.update(task, stage="writing outputs" if label == FINALIZE_LABEL else stage)


# --------------------------------------------------------------------------------------------
# output


def backend_note(requested: str, resolved: str) -> str:
    """One line saying which backend runs, and why when it was chosen automatically."""
    if resolved == "sim":
        why = " (Poplar SDK not importable)" if requested == "auto" else ""
        return f"backend: sim -- the embedded simulator{why}; reports are simulated, not measured on hardware"
    return "backend: sdk -- the Poplar SDK (popxl)" + (" (found by auto)" if requested == "auto" else "")


def _seconds(timings: Mapping[str, Any], key: str) -> str:
    value = timings.get(key)
    return "" if value is None else f"{float(value):.2f}"


def outcome_table(result: Any, *, files: bool = True) -> Any:
    """A :class:`~profcompare.render.sections.Table` of the jobs of a run: label, status, timings,
    report file (``VARIANT/FILE`` in the run directory) or error; without ``files`` the last
    column is left out (the first screen names the page to open instead)."""
    from profcompare.render.control_chars import one_line
    from profcompare.render.format import format_count
    from profcompare.render.sections import Cell, Column, Table

    titles = ("variant", "status", "compile s", "run s", "total s", "samples/step") + (("report / error",) if files else ())
    columns = tuple(Column(title, title.endswith((" s", "step"))) for title in titles)
    rows = []
    for outcome in result.outcomes:
        timings = outcome.info.get("timings") or {}
        status = outcome.status
        detail = outcome.error or ""
        if outcome.has_report:
            # within the run directory (printed in full below the table): short enough for a screen
            report = f"{outcome.directory.name}/{outcome.report_files[0]}"
            detail = f"{report}" + (f"  ({detail})" if detail else "")
        sps = outcome.info.get("samples_per_step")
        rows.append((
            Cell(one_line(outcome.label)),
            Cell(one_line(status), tone=_STATUS_TONE.get(status, "bad")),
            Cell(_seconds(timings, "compile_s")),
            Cell(_seconds(timings, "run_s")),
            Cell(_seconds(timings, "total_s")),
            Cell("" if sps is None else format_count(sps)),
            Cell(one_line(detail)),
        )[: len(columns)])
    return Table.of(columns, tuple(rows))


#: sections of a comparison the terminal summary of ``run`` shows, by their ``--section`` names, in
#: the order of every comparison (the files hold all of them): the verdict, what differs in the
#: two configurations, then the ledger (moves, the memory ledger, what changed the not-always-live
#: peak); the raw per-variable table comes last, for experts
SUMMARY_SECTIONS = ("verdict", "config", "moves", "ledger", "time", "peak", "summary", "categories", "variables")


def comparison_summary_text(comparison: Any, *, top: int) -> str:
    """The terminal summary of one comparison: header (with the liveness rule), warnings, then
    :data:`SUMMARY_SECTIONS` of the text renderer: the verdict, the largest ledger moves, the
    memory ledger (by parameter, then every row), the time diff, what changed the not-always-live peak, and the
    summary, category and largest-variable-change tables (colour and width only on a terminal)."""
    import os

    from profcompare.render.sections import comparison_document
    from profcompare.render.text import render_document

    document = comparison_document(comparison, top=min(top, 10), names=SUMMARY_SECTIONS)  # builds only these
    tty = stdout_is_tty()
    color = tty and "NO_COLOR" not in os.environ
    return render_document(document, color=color, width=text_width())


def nway_summary_text(result: Any) -> str:
    """The terminal N-way table of a run of three or more variants: every summary metric, one
    column per variant (base marked), changes from the base (``result.nway``, made by the run)."""
    import os

    from profcompare.render.nway import render_nway_text

    tty = stdout_is_tty()
    color = tty and "NO_COLOR" not in os.environ
    width = text_width()
    notes = ("Each comparison with the base is in its own page (compare-BASE-vs-NEW.html), linked from index.html.",)
    return render_nway_text(result.nway, title=f"profcompare run {result.name}: variants side by side", color=color,
                            width=width, notes=notes)


def escape_field(text: object) -> str:
    """``text`` made safe for a rich markup string: one line, control characters visible, markup escaped."""
    from rich.markup import escape

    from profcompare.render.control_chars import one_line

    return escape(one_line(str(text)))


def failure_line(text: str) -> str:
    """Error text from a job (a child process wrote it) as one line with control characters made
    visible; run.json and run.log keep the full text."""
    from profcompare.render.control_chars import one_line

    return one_line(text)


def failure_lines(result: Any) -> list[str]:
    """One line per job that did not finish ok (the full error is in its run.json / run.log)."""
    return [failure_line(f"profcompare: {outcome.label}: {outcome.status}: {outcome.error or 'no error text'} "
                         f"(log: {display_path(outcome.directory / 'run.log')})")
            for outcome in result.outcomes if outcome.status != "ok"]


def echo_failures(result: Any) -> None:
    """One stderr line per job that did not finish ok (the full error is in its run.json / run.log)."""
    for line in failure_lines(result):
        click.echo(line, err=True)


@click.command(name="run", cls=KnobCommand)
@click.argument("variants", nargs=-1, required=True, metavar="VARIANT...")
@knob_options
@common_run_options
@addons_option
@compile_only_option
@top_option()
@view_options
@click.pass_context
def command(
    ctx: click.Context,
    variants: tuple[str, ...],
    backend: str,
    workload: str | None,
    addons: str | None,
    compile_only: bool,
    out: str,
    name: str | None,
    jobs: int,
    force: bool,
    quiet: bool,
    top: int | None,
    full: bool | None,
    sections: tuple[str, ...],
    set_knobs: tuple[str, ...],
    **knobs: Any,
) -> None:
    """Build and run workload variants with autoReport, then compare them.

    Example: profcompare run onchip offchip-sharded;
    profcompare run --workload gpt phased phased-rts --compile-only

    Each variant runs in its own subprocess and writes OUT/NAME/VARIANT/ (report + run.json).
    The first variant is the base: it is compared with each other one, and the comparisons are
    written as OUT/NAME/compare-BASE-vs-NEW.{html,md,json}; OUT/NAME/index.html and index.json
    show every variant side by side with links to the comparisons. With two variants the
    terminal shows their comparison; with more, the side-by-side table once. On a terminal that
    is the first screen (a headline, the verdict, the largest moves, the variants, the page to
    open, the headline again); --full prints every table of it, --section NAME the named
    sections of each comparison; to a file or a pipe the text is full. The exit code is 1 when a
    variant failed or ran out of memory.
    """
    from profcompare import runner

    view = text_view(full, sections)  # a bad combination fails before anything runs
    overrides = collect_overrides(knobs, set_knobs)
    runner.make_jobs(list(variants), overrides, workload)  # validate before anything else happens
    refuse_existing_run(out, name, force)
    resolved = runner.resolve_backend(backend)
    child_environ = addons_environment(addons, resolved)
    execution = execution_of(compile_only, resolved)
    if not quiet:
        click.echo(backend_note(backend, resolved), err=True)
        if execution_note(execution):
            click.echo(execution_note(execution), err=True)
    from profcompare.commands.pages import run_pages

    with ProgressDisplay(list(variants), enabled=not quiet) as display:
        result = runner.run_variants(
            list(variants),
            overrides=overrides,
            workload=workload,
            backend=resolved,
            out=out,
            name=name,
            jobs=jobs,
            force=force,
            pages=run_pages(top or 20),
            progress=display,
            environ=child_environ,
            execution=execution,
        )

    screen = view == BRIEF and result.nway is not None
    if screen:
        from profcompare.render.screen import SCREEN_LINES

        # what went to the terminal before the screen takes rows of it: the backend line and the
        # progress display (a line per variant and one for the comparisons), then any failures
        said = [] if quiet else [backend_note(backend, resolved), execution_note(execution) or "",
                                 *list(variants), "comparing"]
        if not result.ok:
            said += echo_problems(result)  # before the screen: its last line is the headline
        click.echo(run_screen(result, lines=SCREEN_LINES - terminal_rows(said)), nl=False, color=True)
    elif view == FULL or view == BRIEF:
        print_full(result, top=top or 20)
    else:
        click.echo(run_sections_text(result, sections, top=top or 20), nl=False, color=True)
    if not result.ok:
        if not screen:
            echo_problems(result)
        ctx.exit(1)


def print_full(result: Any, *, top: int) -> None:
    """Print every table of a run's text: the variants, the summary sections of its comparison
    (or the side-by-side table of three or more variants) and the files written."""
    print_table(outcome_table(result))
    if len(result.outcomes) > 2 and result.nway is not None:
        # an N-way run: one side-by-side table, not a full report per pair
        click.echo()
        click.echo(nway_summary_text(result))
    else:
        for item in result.comparisons:
            if item.comparison is not None:
                click.echo()
                click.echo(comparison_summary_text(item.comparison, top=top or 20))
    if len(result.outcomes) > 1:
        if not result.outcomes[0].has_report:
            click.echo(f"\nno comparison: the base variant {result.outcomes[0].label!r} has no report")
        else:
            skipped = [o.label for o in result.outcomes[1:] if not o.has_report]
            if skipped:
                click.echo(f"\nnot compared (no report): {', '.join(skipped)}")

    click.echo(f"\nrun written to {display_path(result.directory)}/" + ("  (replaced the previous run)" if result.replaced else ""))
    for key, path in result.files.items():
        click.echo(f"  {key:<10} {display_path(path)}")
    for item in result.comparisons:
        for fmt, path in item.files.items():
            click.echo(f"  {fmt:<10} {display_path(path)}")
    click.echo(f"  (backend {result.backend}, {result.wall_seconds:.1f} s wall)")


def echo_problems(result: Any) -> list[str]:
    """One stderr line per job that did not finish ok and per comparison that could not be made;
    returns the lines."""
    lines = failure_lines(result)
    lines += [failure_line(f"profcompare: comparison {item.base} vs {item.new} failed: {item.error}")
              for item in result.comparisons if item.error]
    for line in lines:
        click.echo(line, err=True)
    return lines


def terminal_rows(lines: Sequence[str]) -> int:
    """The rows ``lines`` take on the terminal standard output shows (an empty string takes none)."""
    from profcompare.render.screen import screen_rows

    return screen_rows("".join(f"{line}\n" for line in lines if line), text_width())


def run_screen(result: Any, *, lines: int | None = None) -> str:
    """The first screen of a run: for two variants their comparison's (headline, verdict, largest
    moves, the variants, the page to open, the headline again), for one or more than two the
    N-way verdict's, pointing at index.html; fitted to ``lines`` rows of the terminal (default
    :data:`~profcompare.render.screen.SCREEN_LINES`; colour only on one)."""
    import shlex

    from profcompare.comparison.verdict import nway_verdict
    from profcompare.render.screen import SCREEN_LINES, comparison_screen, nway_screen
    from profcompare.render.sections import Section

    rows = SCREEN_LINES if lines is None else lines
    base = result.outcomes[0]
    note = (f"Run directory {display_path(result.directory)}/ (backend {result.backend}, {result.wall_seconds:.1f} s wall)"
            + ("; it replaced the previous run." if result.replaced else "."))
    variants = Section("Variants", (outcome_table(result, files=False),), (note,))
    index = result.files.get("index html")
    shown = [item for item in result.comparisons if item.comparison is not None]
    if len(result.outcomes) == 2 and len(shown) == 1:
        item = shown[0]
        pair = " ".join(shlex.quote(display_path(result.directory / label)) for label in (item.base, item.new))
        steps = []
        if "html" in item.files:
            steps.append("open the whole comparison (ledger, execution trace, liveness, variables, code): "
                         f"{display_path(item.files['html'])}")
        steps.append(f"every table here (or one: --section NAME): profcompare compare {pair} --full")
        return comparison_screen(item.comparison, sections=(variants,), next_steps=steps, lines=rows, **text_style())
    steps = []
    if index is not None and len(result.outcomes) == 1:
        steps.append(f"open the run's page (its figures and memory ledger): {display_path(index)}")
    elif index is not None:
        steps.append(f"open the variants side by side, linked to each comparison with {base.label}: {display_path(index)}")
    if shown:
        steps.append("every table of one comparison: profcompare compare "
                     f"{shlex.quote(display_path(result.directory / base.label))} "
                     f"{shlex.quote(display_path(result.directory / shown[0].new))} --full")
    return nway_screen(nway_verdict(result.nway), base_status=base.status, sections=(variants,), next_steps=steps,
                       lines=rows, **text_style())


def run_sections_text(result: Any, names: tuple[str, ...], *, top: int) -> str:
    """The named sections (``--section``) of each comparison of a run, each under its title line."""
    from profcompare.commands.compare import sections_text

    texts = [sections_text(item.comparison, names, top=top, output=None)
             for item in result.comparisons if item.comparison is not None]
    return "\n".join(texts) if texts else "no comparison: no two variants with a report\n"


__all__ = ["COMMON_HEADING", "SHARED_HEADING", "SUMMARY_SECTIONS", "KnobCommand", "ProgressDisplay", "backend_note", "collect_overrides", "command",
           "escape_field", "failure_line", "knob_heading", "knob_options", "nway_summary_text", "refuse_existing_run"]
