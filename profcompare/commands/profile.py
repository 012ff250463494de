"""``profcompare profile SCRIPT [ARGS...]``: run an unmodified popxl program with autoReport, then show it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from profcompare.commands._common import addons_environment, addons_option, compile_only_option, execution_note, execution_of, top_option

#: lines of the program's output shown when it exits with an error status (pytest's summary)
OUTPUT_TAIL_LINES = 30


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = text.rstrip("\n").splitlines()[-lines:]
    return "\n".join(kept)


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
@click.argument("script", metavar="SCRIPT")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.pass_context
def command(ctx: click.Context, module: bool, backend: str, out: str, name: str | None, force: bool, quiet: bool,
            addons: str | None, compile_only: bool, top: int | None, script: str, args: tuple[str, ...]) -> None:
    """Run a popxl / popxl-addons program unmodified with autoReport, then show its last report.

    Example: profcompare profile train.py --epochs 1 ; profcompare profile -m pytest tests/test_x.py

    The program runs in a subprocess, in the current directory, with popxl and popxl_addons
    resolved to the Poplar SDK when it is importable, else to the embedded simulator. Every
    popxl Session writes its report to OUT/NAME/SCRIPT/session-N/; the directory OUT/NAME/SCRIPT
    opens as the last Session's report (for show, variables and compare). The program's output
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
    if outcome.has_report:
        report = result.open_report(job.label)
        emit(render("text", report, top=top, output=None), None, force=False)
    sessions = info.get("sessions") or []
    click.echo(f"\nrun written to {display_path(result.directory)}/" + ("  (replaced the previous run)" if result.replaced else ""))
    for session in sessions:
        report_file = session.get("report")
        where = display_path(outcome.directory / report_file) if report_file else "no report"
        click.echo(f"  session {session.get('index')}: {where}")
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


__all__ = ["command"]
