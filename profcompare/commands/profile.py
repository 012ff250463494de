"""``profcompare profile SCRIPT [ARGS...]``: run an unmodified popxl program with autoReport, then show it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from profcompare.commands._common import addons_environment, addons_option, compile_only_option, execution_note, execution_of, top_option
from profcompare.errors import ProfcompareError

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report

#: lines of the program's output shown when it exits with an error status (pytest's summary)
OUTPUT_TAIL_LINES = 30


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = text.rstrip("\n").splitlines()[-lines:]
    return "\n".join(kept)


#: variable kinds only a program that updates its weights holds: such a Session trains
TRAINING_KINDS = frozenset({"gradient", "optimizer_state", "accumulator"})


@dataclass(frozen=True)
class SessionReport:
    """One Session's report of a profiled program: its number (``session-N``, from 1 in creation
    order), its report file relative to the job directory, the report, whether its program trains
    (holds gradients, optimizer state or accumulators) and its peak liveness in bytes."""

    number: int
    report_file: str
    report: Report
    trains: bool
    peak_liveness_bytes: int


def session_number(report_file: str, fallback: int) -> int:
    """The N of a ``session-N/...`` report file, else ``fallback``."""
    top = report_file.split("/", 1)[0]
    number = top.rpartition("-")[2]
    return int(number) if top.startswith("session-") and number.isdigit() else fallback


def parse_session(text: str | None) -> int | str | None:
    """``--session``'s value: None (the default Session), "all", or a Session number >= 1;
    a one-line ProfcompareError otherwise (before the program runs)."""
    if text is None:
        return None
    value = text.strip().lower()
    if value == "all":
        return "all"
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise ProfcompareError(f"--session {text!r}: expected a Session number (1, 2, ...) or 'all'")


def session_reports(directory: Path, report_files: Sequence[str]) -> list[SessionReport]:
    """Open every Session report of a profiled job (``report_files`` relative to ``directory``);
    returns them in Session order (session-1 first)."""
    from profcompare.readers import open_report

    found = []
    for position, report_file in enumerate(sorted(report_files, key=lambda f: session_number(f, 0))):
        report = open_report(directory / report_file)
        kinds = set(report.variables["kind"].astype(str)) if len(report.variables) else set()
        peak = report.summary()["peak_liveness_bytes"]
        found.append(SessionReport(session_number(report_file, position + 1), report_file, report,
                                   bool(kinds & TRAINING_KINDS), int(peak) if peak == peak else 0))
    return found


def choose_sessions(sessions: Sequence[SessionReport], wanted: int | str | None) -> tuple[list[SessionReport], str]:
    """The Sessions ``profile`` shows and the line saying which and why.

    ``wanted`` None: one Session -- the largest (by peak liveness) of those that train, else the
    largest of all; "all": every Session; N: Session N (ProfcompareError naming the Sessions there
    are when there is none). The line is empty when the program created a single Session and none
    was asked for."""
    from profcompare.render.format import format_bytes

    count = len(sessions)
    numbers = ", ".join(str(s.number) for s in sessions)
    if wanted == "all":
        return list(sessions), f"showing all {count} Sessions, in the order the program created them"
    if isinstance(wanted, int):
        chosen = [s for s in sessions if s.number == wanted]
        if not chosen:
            raise ProfcompareError(f"--session {wanted}: the program created no such Session with a report "
                                   f"(Sessions: {numbers})")
        return chosen, f"showing Session {wanted} of {count} (--session {wanted})"
    if count == 1:
        return list(sessions), ""
    training = [s for s in sessions if s.trains]
    pool = training or list(sessions)
    best = max(pool, key=lambda s: (s.peak_liveness_bytes, -s.number))
    peak = format_bytes(best.peak_liveness_bytes)
    if training:
        why = ("the training Session" if len(training) == 1 else f"the largest of {len(training)} training Sessions") + \
            f" (it updates weights; peak liveness {peak})"
    else:
        why = f"the largest (peak liveness {peak}; no Session updates weights)"
    return [best], f"showing Session {best.number} of {count}: {why}; --session N or --session all shows others"


def _visible_lines(text: str) -> str:
    """Text of several lines with every control character of each line made visible (run.log keeps it raw)."""
    from profcompare.render.control_chars import visible

    return "\n".join(visible(line) for line in text.splitlines())


@click.command(
    name="profile",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("-m", "module", is_flag=True, help="SCRIPT is a module to run as `python -m` does (e.g. -m pytest tests/test_x.py).")
@click.option("--backend", type=click.Choice(["auto", "sdk", "sim"]), default="auto", show_default=True,
              help="auto = the Poplar SDK when importable, else the embedded simulator.")
@click.option("--out", default="reports", show_default=True, type=click.Path(file_okay=False), help="Output root.")
@click.option("--name", default=None, help="Run directory name (default: timestamp + profile + script name).")
@click.option("--force", is_flag=True, help="Replace an existing run directory of the same name.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@addons_option
@compile_only_option
@top_option()
@click.option("--session", "session", default=None, metavar="N|all",
              help="Which Session's report to show: its number (session-N), or all [default: the training Session "
                   "(one that updates weights; the largest by peak liveness if several), else the largest].")
@click.argument("script", metavar="SCRIPT")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.pass_context
def command(ctx: click.Context, module: bool, backend: str, out: str, name: str | None, force: bool, quiet: bool,
            addons: str | None, compile_only: bool, top: int | None, session: str | None, script: str,
            args: tuple[str, ...]) -> None:
    """Run a popxl / popxl-addons program unmodified with autoReport, then show a Session's report.

    Example: profcompare profile train.py --epochs 1 ; profcompare profile -m pytest tests/test_x.py

    The program runs in a subprocess, in the current directory, with popxl and popxl_addons
    resolved to the Poplar SDK when it is importable, else to the embedded simulator. Every
    popxl Session writes its report to OUT/NAME/SCRIPT/session-N/; profile shows the training
    Session's (or the largest's) and says which, --session N or all picks others. The directory
    OUT/NAME/SCRIPT opens as the last Session's report (for show, variables and compare). The program's output
    goes to OUT/NAME/SCRIPT/run.log. Options after SCRIPT are the program's. The exit code is 1
    when the program fails, exits with an error status or leaves no report.

    The program runs in a process group of its own: processes it starts end with it (when it
    exits, when profcompare is interrupted or killed).
    --compile-only builds, lowers and compiles the program exactly as usual but computes nothing
    and keeps no host data (Session.run returns zeros): the report's memory, liveness and cycles
    are the same, for programs too large to emulate numerically.
    """
    from profcompare import runner
    from profcompare.commands.run import ProgressDisplay, backend_note, display_path, echo_failures
    from profcompare.commands._common import emit, render

    wanted = parse_session(session)
    job = runner.script_job(script, args, module=module)
    resolved = runner.resolve_backend(backend)
    child_environ = addons_environment(addons, resolved)
    execution = execution_of(compile_only, resolved)
    if name is not None:
        run_name = runner.check_run_name(name)
    else:
        run_name = runner.unique_run_name(Path(out), runner.default_run_name([job.label], prefix="profile"))
    if not quiet:
        click.echo(backend_note(backend, resolved), err=True)
        if execution_note(execution):
            click.echo(execution_note(execution), err=True)
    with ProgressDisplay([job.label], enabled=not quiet) as display:
        result = runner.execute_jobs([job], out=out, name=run_name, backend=resolved, force=force, progress=display,
                                     environ=child_environ, execution=execution, keep_incomplete=True)
    outcome = result.outcomes[0]
    info: Any = outcome.info
    shown: list[SessionReport] = []
    refused: ProfcompareError | None = None
    line = ""
    if outcome.has_report:
        try:
            shown, line = choose_sessions(session_reports(outcome.directory, outcome.report_files), wanted)
        except ProfcompareError as exc:
            refused = exc  # the run is kept and listed below; the error is the last line
        if line:
            click.echo(line)
        for chosen in shown:
            if wanted == "all":
                trains = ", trains: it updates weights" if chosen.trains else ""
                click.echo(f"\nSession {chosen.number} ({chosen.report_file}{trains})")
            if line or wanted == "all":
                click.echo()
            emit(render("text", chosen.report, top=top, output=None), None, force=False)
    sessions = info.get("sessions") or []
    shown_files = {chosen.report_file for chosen in shown}
    click.echo(f"\nrun written to {display_path(result.directory)}/" + ("  (replaced the previous run)" if result.replaced else ""))
    for entry in sessions:
        report_file = entry.get("report")
        where = display_path(outcome.directory / report_file) if report_file else "no report"
        mark = "  (shown above)" if report_file in shown_files and len(sessions) > 1 else ""
        click.echo(f"  session {entry.get('index')}: {where}{mark}")
    click.echo(f"  output   {display_path(outcome.directory / runner.RUN_LOG)}")
    click.echo(f"  (backend {result.backend}, {result.wall_seconds:.1f} s wall)")
    if outcome.status != "ok":
        echo_failures(result)
        if info.get("traceback"):
            click.echo(_visible_lines(str(info["traceback"]).rstrip("\n")), err=True)
        elif info.get("exit_code") not in (None, 0):
            tail = _tail(outcome.directory / runner.RUN_LOG, OUTPUT_TAIL_LINES)
            if tail:
                click.echo(f"last lines of the program's output ({display_path(outcome.directory / runner.RUN_LOG)}):", err=True)
                click.echo(_visible_lines(tail), err=True)
        ctx.exit(1)
    if refused is not None:
        raise refused


__all__ = ["TRAINING_KINDS", "SessionReport", "choose_sessions", "command", "parse_session", "session_reports"]
