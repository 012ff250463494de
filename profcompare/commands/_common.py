"""Options and helpers shared by the report commands (show, variables, compare).

The one place that decides where rendered output goes: a file (atomically, never over an
existing file without ``--force``), or standard output for ``-o -`` and by default. HTML is
not sent to a terminal (it would only flood it); text gets colour and the terminal's width
only when standard output is a terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from profcompare.errors import OutputExistsError, ProfcompareError
from profcompare.render.base import get_renderer
from profcompare.render.output import write_output

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report

F = TypeVar("F", bound=Callable[..., Any])

#: the value of ``-o`` meaning standard output
STDOUT = "-"


def format_option(formats: Sequence[str], default: str = "text") -> Callable[[F], F]:
    """Return the ``--format`` option restricted to ``formats``."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(formats)),
        default=default,
        show_default=True,
        help="Output format.",
    )


def output_options(func: F | None = None, *, html: bool = True) -> Any:
    """Add ``-o/--output FILE`` and ``--force`` to a command (``html=False``: a command without
    an html format, whose help then does not mention it). Usable as ``@output_options`` or
    ``@output_options(html=False)``."""

    def decorate(target: F) -> F:
        target = click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")(target)
        where = ("Write to FILE ('-' = standard output; the default, except for html on a terminal)." if html
                 else "Write to FILE ('-' = standard output, the default).")
        return click.option("-o", "--output", metavar="FILE", default=None, help=where)(target)

    return decorate(func) if func is not None else decorate


def addons_option(func: F) -> F:
    """Add ``--addons 3.0|3.4``: the popxl-addons generation the simulator emulates (default:
    ``$PROFCOMPARE_SIM_ADDONS``, else 3.4). Pair it with :func:`addons_environment`."""
    from profcompare.backend.addons_generation import DEFAULT_GENERATION, ENV_VAR, GENERATIONS

    return click.option(
        "--addons",
        type=click.Choice(list(GENERATIONS)),
        default=None,
        help=f"popxl-addons generation the simulator emulates: 3.0 = the threshold API, 3.4 = replica "
             f"groupings [default: ${ENV_VAR}, else {DEFAULT_GENERATION}]. With the SDK backend the "
             "installed popxl-addons decides.",
    )(func)


def addons_environment(addons: str | None, backend: str) -> dict[str, str] | None:
    """Return the environment the runner gives its subprocesses for ``--addons`` (None: inherit
    ours unchanged), after checking the value: ``$PROFCOMPARE_SIM_ADDONS`` must name a known
    generation, and ``--addons`` is refused (ProfcompareError) with the resolved ``backend``
    "sdk", where the installed popxl-addons decides."""
    from profcompare.backend.addons_generation import ENV_VAR, UnknownGenerationError, current

    if addons is not None and backend == "sdk":
        raise ProfcompareError("--addons selects what the simulator emulates; with the SDK backend the installed "
                               "popxl-addons decides (drop --addons or use --backend sim)")
    if backend != "sdk":
        try:
            current()  # a bad $PROFCOMPARE_SIM_ADDONS is refused before anything runs
        except UnknownGenerationError as exc:
            raise ProfcompareError(str(exc)) from None
    if addons is None:
        return None
    return {**os.environ, ENV_VAR: addons}


def compile_only_option(func: F) -> F:
    """Add ``--compile-only``: the simulator builds, lowers and compiles the program and models
    memory and time, computing no values. Pair it with :func:`execution_of`."""
    return click.option(
        "--compile-only",
        "compile_only",
        is_flag=True,
        help="Simulator only: build and compile the program and model its memory and time without computing "
             "any value (no host data, no numpy kernels; Session.run returns zeros). For programs too large to "
             "emulate numerically [default: $PROFCOMPARE_SIM_EXECUTION, else numeric].",
    )(func)


def execution_of(compile_only: bool, backend: str) -> str | None:
    """The execution mode the runner passes on for ``--compile-only`` (None: inherit
    ``$PROFCOMPARE_SIM_EXECUTION``), after checking it fits ``backend`` (ProfcompareError)."""
    from profcompare.runner import check_execution

    execution = "compile-only" if compile_only else None
    check_execution(execution, backend)
    return execution


def execution_note(execution: str | None) -> str | None:
    """The line ``run`` / ``sweep`` / ``profile`` print under the backend for a compile-only run."""
    from profcompare.backend import execution_mode

    try:
        mode = execution_mode.normalise(execution) if execution is not None else execution_mode.current()
    except execution_mode.UnknownExecutionModeError:
        return None
    if mode != execution_mode.COMPILE_ONLY:
        return None
    return f"execution: {execution_mode.DESCRIPTIONS[mode]}"


#: Formats that are exports: complete unless ``--top`` says otherwise.
EXPORT_FORMATS = frozenset({"csv", "json"})


def top_option(default: int = 20, *, views: str = "text, markdown and html") -> Callable[[F], F]:
    """Return the ``--top N`` option: rows per table in the ``views`` formats (default
    ``default``; the rest are summed into an "other" row); csv and json exports hold every row
    unless ``--top`` is given."""
    return click.option(
        "--top",
        type=click.IntRange(min=1),
        default=None,
        help=f"Rows per table [default: {default} for {views}; all rows for csv and json]; "
             "the rest are summed into an 'other' row.",
    )


def csv_table_option(tables: Sequence[str]) -> Callable[[F], F]:
    """Return the ``--table NAME`` option: which table ``--format csv`` writes (CSV holds one
    table; json holds them all): one of ``tables`` (complete tables of raw figures; ``tables[0]``
    is the default) or the id of a table the HTML page shows (e.g. ``code-table``), as the page
    draws it, its footer rows last."""
    return click.option(
        "--table",
        "table",
        metavar="NAME",
        default=tables[0],
        show_default=True,
        help="The table --format csv writes (json holds every table): " + ", ".join(tables)
             + ", or the id of a table the HTML page shows (code-table, tile-stats-table, ...; a wrong id lists them).",
    )


def check_csv_table(fmt: str, table: str, default: str) -> None:
    """Refuse (ProfcompareError) ``--table`` with a format other than csv, or an empty name."""
    if not table.strip():
        raise ProfcompareError("--table needs a table name")
    if table != default and fmt != "csv":
        raise ProfcompareError(f"--table {table} applies to --format csv; --format json holds every table")


def resolve_top(top: int | None, fmt: str, default: int = 20) -> int | None:
    """The row limit for ``fmt``: ``top`` when given, else all rows (None) for exports and
    ``default`` for views."""
    if top is not None:
        return top
    return None if fmt in EXPORT_FORMATS else default


def announce_cut(fmt: str, shown: int, total: int, noun: str = "variables") -> None:
    """Say on stderr when an export was limited by --top (an export is complete otherwise)."""
    if fmt in EXPORT_FORMATS and shown < total:
        click.echo(f"profcompare: note: --top {shown}: wrote {shown:,} of {total:,} {noun}", err=True)


def stdout_is_tty() -> bool:
    """Return True when standard output is a terminal (False when it is closed)."""
    stream = sys.stdout  # CliRunner swaps sys.stdout too, so tests see their capture
    return stream is not None and stream.isatty()


def text_width(output: str | None = None) -> int | None:
    """The width text output is fitted to: the terminal's when standard output is one (``$COLUMNS``
    first, as the shell sets it), ``$COLUMNS`` when it is set for a pipe, and None (unbounded:
    nothing shortened or left out) for a file (``-o FILE``) or a pipe without ``$COLUMNS``."""
    if not _to_stdout(output):
        return None
    if stdout_is_tty():
        return shutil.get_terminal_size(fallback=(80, 24)).columns
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def print_table(table: Any) -> None:
    """Print a :class:`~profcompare.render.sections.Table` on standard output, fitted to
    :func:`text_width` (coloured on a terminal)."""
    from profcompare.render.text import render_table

    color = stdout_is_tty() and "NO_COLOR" not in os.environ
    click.echo(render_table(table, color=color, width=text_width()), nl=False, color=True)


def _to_stdout(output: str | None) -> bool:
    return output is None or output == STDOUT


def run_option() -> Callable[[F], F]:
    """``--run N``: the run of the execution trace the views draw."""
    return click.option("--run", "run", type=click.IntRange(min=0), default=None, metavar="N",
                        help="The run of the execution trace to show (default: the first steady-state run, the "
                             "second of several: the first includes one-time loads).")


def with_trace_run(report: Report, run: int | None) -> Report:
    """``report`` drawing trace run ``run`` (unchanged for None); a run its trace does not hold
    is a usage error (exit status 2)."""
    if run is None:
        return report
    from profcompare.analysis.trace import UnknownRunError, choose_run

    try:
        choose_run(report.trace, run)
    except UnknownRunError as exc:
        raise click.BadParameter(f"{report.label}: {exc}", param_hint="'--run'") from None
    return report.with_trace_run(run)


def load_report(path: str, *, code: bool = True) -> Report:
    """Return the report at ``path`` (a run directory, report directory or file); ``code=False``
    skips the per-program code of a Poplar profile. Reading a Poplar profile shows its progress
    on a terminal."""
    from profcompare.readers import open_report

    return open_report(path, code=code, progress=pva_progress())


def pva_progress() -> Any:
    """A progress callback for reading a Poplar profile: a one-line display on stderr when it
    is a terminal, else None (nothing printed)."""
    if not sys.stderr.isatty():
        return None
    shown: dict[str, int] = {}

    def tell(part: str, done: int, total: int) -> None:
        if total > 1 and shown.get(part) != done:
            shown[part] = done
            end = "\n" if done >= total else ""
            click.echo(f"\rreading {part}: {done:,} of {total:,} programs", err=True, nl=False)
            if end:
                click.echo("", err=True)

    return tell


#: what the terminal text of a comparison shows (see :func:`text_view`)
BRIEF, FULL, SECTIONS = "brief", "full", "sections"


def view_options(func: F) -> F:
    """Add ``--full/--brief`` and ``--section NAME`` (repeatable): what the text of a comparison
    shows. Pair them with :func:`text_view`."""
    from profcompare.render.section_names import SECTION_NAMES

    func = click.option(
        "--section",
        "sections",
        multiple=True,
        type=click.Choice(list(SECTION_NAMES)),
        metavar="NAME",
        help="Print only this section of the comparison as text (repeatable), in the order of the full text: "
             + ", ".join(SECTION_NAMES) + ".",
    )(func)
    return click.option(
        "--full/--brief",
        "full",
        default=None,
        help="Text: --brief prints the first screen (a one-sentence headline, the verdict, the largest moves, where to "
             "look next; the headline again last), --full every table [default: --brief on a terminal, --full to "
             "a file or a pipe]. Markdown, json, html and csv are always complete.",
    )(func)


def text_view(full: bool | None, sections: Sequence[str], *, fmt: str = "text", output: str | None = None) -> str:
    """What the text of a comparison shows: :data:`SECTIONS` for ``--section``, :data:`FULL`
    for ``--full``, :data:`BRIEF` for ``--brief``, and by default the brief first screen when
    standard output is a terminal, every table otherwise (a file or a pipe keeps the whole text).

    Refuses (click.UsageError, exit status 2) ``--section`` with ``--full`` or ``--brief``, and
    ``--section`` or ``--brief`` with a format other than text: those are always complete.
    """
    if sections and full is not None:
        raise click.UsageError(f"--section prints the named sections only; drop --{'full' if full else 'brief'}")
    if fmt != "text" and (sections or full is False):
        raise click.UsageError(f"--{'section' if sections else 'brief'} chooses what the text shows; "
                               f"--format {fmt} is always complete")
    if sections:
        return SECTIONS
    if full is None:
        return BRIEF if fmt == "text" and _to_stdout(output) and stdout_is_tty() else FULL
    return FULL if full else BRIEF


def text_style(output: str | None = None) -> dict[str, Any]:
    """The options of text written to ``output`` (None or ``-``: standard output): colour only
    on a terminal (and without ``$NO_COLOR``), the width of :func:`text_width`."""
    return {"color": _to_stdout(output) and stdout_is_tty() and "NO_COLOR" not in os.environ,
            "width": text_width(output)}


def render(fmt: str, obj: Any, *, top: int | None, output: str | None) -> str | bytes | Iterator[str]:
    """Return ``obj`` rendered in ``fmt``; text is fitted to :func:`text_width` and coloured
    only on a terminal.

    Refuses (ProfcompareError) HTML to a terminal before any work is done, suggesting ``-o``.
    """
    options: dict[str, Any] = {}
    if _to_stdout(output) and stdout_is_tty() and fmt == "html" and output is None:
        raise ProfcompareError("not writing HTML to a terminal; give -o FILE.html (or -o - to force it)")
    if fmt == "text":
        options = text_style(output)
    renderer = get_renderer(fmt, **options)
    if fmt == "json":  # written part by part (emit): a large export is never held twice
        from profcompare.render.json_out import JsonRenderer

        assert isinstance(renderer, JsonRenderer)
        return renderer.render_parts(obj, top=resolve_top(top, fmt) or 0)
    return renderer.render(obj, top=resolve_top(top, fmt) or 0)


def check_output(output: str | None, *, force: bool) -> None:
    """Fail early (OutputExistsError) when ``output`` is an existing file and ``force`` is off,
    and (ProfcompareError) when it is a directory or standard output is closed, so no work is
    done for an output that would be refused anyway."""
    if _to_stdout(output) and sys.stdout is None:
        raise ProfcompareError("standard output is closed; give -o FILE")
    if not _to_stdout(output) and os.path.isdir(str(output)):
        raise ProfcompareError(f"{output} is a directory; give a file name")
    if not _to_stdout(output) and not force and os.path.exists(str(output)):
        raise OutputExistsError(f"{output} exists; use --force to overwrite")


#: Characters of a text in parts written to standard output at a time (see :func:`emit`).
_ECHO_BATCH = 1 << 20


def emit(content: str | bytes | Iterator[str], output: str | None, *, force: bool) -> None:
    """Write ``content`` (a text, bytes, or a text in consecutive parts) to ``output`` (a file
    path, or standard output for None and ``-``)."""
    if _to_stdout(output):
        if sys.stdout is None:
            raise ProfcompareError("standard output is closed; give -o FILE")
        if not isinstance(content, (str, bytes)):
            batch: list[str] = []
            size = 0
            for part in content:  # a megabyte or so at a time (echo flushes each time)
                batch.append(part)
                size += len(part)
                if size >= _ECHO_BATCH:
                    click.echo("".join(batch), nl=False, color=True)
                    batch, size = [], 0
            click.echo("".join(batch), nl=False, color=True)
        elif isinstance(content, bytes):
            click.echo(content, nl=False)  # bytes go to the binary stream under sys.stdout, flushed
        else:
            # colour codes are present only when render() chose colour for a terminal; keep them
            click.echo(content, nl=not content.endswith("\n"), color=True)
        return
    assert output is not None
    write_output(content, output, force=force)



def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())

__all__ = ["BRIEF", "FULL", "SECTIONS", "STDOUT", "check_output", "display_path", "emit", "format_option", "load_report",
           "output_options", "print_table", "render", "stdout_is_tty", "text_style", "text_view", "text_width",
           "top_option", "view_options"]
