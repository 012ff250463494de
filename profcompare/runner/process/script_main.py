"""Subprocess entry point of ``profcompare profile``: ``python -m profcompare.runner.process.script_main SPEC_JSON``.

Runs an unmodified popxl / popxl-addons program (a script, or a module such as pytest) as
``python`` would, in the user's working directory (``config.cwd``), with popxl resolved to the
simulator (:func:`profcompare.sim.install`) or the SDK (``PROFCOMPARE_BACKEND``). Every
``popxl.Session`` it creates writes its autoReport into its own directory of the job,
``session-<n>/`` (n counts from 1 in creation order), by setting ``autoReport.directory`` in
``POPLAR_ENGINE_OPTIONS`` before the Session compiles (the simulator reads the variable then,
as Poplar does when it creates its engine).

Writes ``run.json`` into the job directory (the process's starting directory): the fields of
docs/report-format.md, ``report_files`` newest Session first (so opening the job directory
opens the last Session's report), plus ``sessions``, ``exit_code`` and ``traceback`` (the
program's own frames only; None when it ran to the end). Progress goes to the parent as JSON
lines on the original stdout; everything the program prints goes to run.log.

Exit code: 0 when the program ran to the end (or exited with status 0) and left a report.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profcompare.runner.process.variant_main import _execution_mode, _is_out_of_memory, _report_oom, child_main
from profcompare.runner.rundir import RUN_JSON, RUN_SCHEMA_VERSION, find_report_files, now_iso, write_json_atomic

#: subdirectory of the job holding the report of the n-th Session
SESSION_DIR = "session-{n}"

#: the profcompare package (its frames are left out of a program's traceback)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _program_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` with profcompare's and runpy's frames left out: what the
    program's author needs is where their code failed (the last line names the error)."""
    tb = traceback.TracebackException.from_exception(exc)
    keep = []
    for frame in tb.stack:
        name = os.path.abspath(frame.filename)
        if name.startswith(_PACKAGE_DIR + os.sep) or os.path.basename(name) == "runpy.py" or frame.filename.startswith("<frozen "):
            continue
        keep.append(frame)
    tb.stack = traceback.StackSummary.from_list(keep)
    return "".join(tb.format())


#: environment of the program's processes under the simulator: the job directory their Sessions
#: report into (read by the ``sitecustomize`` of ``child_site``, which ``PYTHONPATH`` leads with)
JOB_DIR_VARIABLE = "PROFCOMPARE_SIM_JOB_DIR"
_CHILD_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_site")


def claim_session_dir(job_dir: Path) -> tuple[int, Path]:
    """The next free ``session-<n>`` directory of ``job_dir``, created: (n, path).

    ``mkdir`` either creates a directory or fails because it exists, so processes of the same
    program numbering their Sessions at the same time never get the same n."""
    n = 1
    while True:
        directory = job_dir / SESSION_DIR.format(n=n)
        try:
            directory.mkdir()
        except FileExistsError:
            n += 1
            continue
        return n, directory


def install_in_child() -> None:
    """In a Python process the profiled program started: resolve popxl to the simulator and
    report every Session into the job directory named by ``PROFCOMPARE_SIM_JOB_DIR``."""
    job_dir = Path(os.environ[JOB_DIR_VARIABLE])
    from profcompare import sim

    sim.install()
    import popxl

    _instrument_sessions(popxl, job_dir, [], lambda stage: None)


def _child_environment(job_dir: Path) -> None:
    """Make the program's own Python subprocesses run on the simulator too (see install_in_child)."""
    os.environ[JOB_DIR_VARIABLE] = str(job_dir)
    existing = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != _CHILD_SITE]
    os.environ["PYTHONPATH"] = os.pathsep.join([_CHILD_SITE, *existing])
    # programs that build a child's PYTHONPATH from their own sys.path (Graphcore's application
    # tests do) pass it on too; last on this process's path, where it changes no import here
    if _CHILD_SITE not in sys.path:
        sys.path.append(_CHILD_SITE)
    # a child started by name (``python3 train.py``, as those tests do) is this Python, as in an
    # activated virtual environment: not another one on PATH that cannot import profcompare
    if sys.prefix != sys.base_prefix:
        bin_dir = os.path.dirname(os.path.abspath(sys.executable))
        rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
        os.environ["PATH"] = os.pathsep.join([bin_dir, *rest])


def _instrument_sessions(popxl: Any, job_dir: Path, sessions: list[dict[str, Any]],
                         emit: Callable[[str], None]) -> None:
    """Wrap ``popxl.Session`` so each Session reports into ``job_dir/session-<n>/``, n counted over
    every process of the program (:func:`claim_session_dir`)."""
    original = popxl.Session
    if getattr(original, "_profcompare_wrapped", False):
        return

    class Session(original):  # type: ignore[misc,valid-type]
        _profcompare_wrapped = True

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            n, directory = claim_session_dir(job_dir)
            options = json.loads(os.environ.get("POPLAR_ENGINE_OPTIONS") or "{}")
            options["autoReport.directory"] = str(directory)
            os.environ["POPLAR_ENGINE_OPTIONS"] = json.dumps(options)
            sessions.append({"index": n, "directory": directory.name})
            emit("compiling")
            super().__init__(*args, **kwargs)
            emit("running")

    Session.__name__ = Session.__qualname__ = original.__name__
    Session.__module__ = original.__module__
    Session.__doc__ = original.__doc__
    popxl.Session = Session


def _backend_popxl(backend: str) -> Any:
    if backend == "sim":
        from profcompare import sim

        sim.install()
    import popxl

    return popxl


def _session_number(report_file: str) -> int | None:
    top = report_file.split("/", 1)[0]
    prefix = SESSION_DIR.format(n="")
    number = top[len(prefix):] if top.startswith(prefix) else ""
    return int(number) if number.isdigit() else None


def run(spec: dict[str, Any], emit: Callable[[str], None]) -> dict[str, Any]:
    """Run the program described by ``spec``; write and return run.json's content."""
    from profcompare._version import __version__

    job_dir = Path.cwd()
    config = spec["config"]
    started, t0 = now_iso(), time.perf_counter()
    sessions: list[dict[str, Any]] = []
    info: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "workload": "script",
        "variant": spec["variant"],
        "backend": spec["backend"],
        "config": config,
        "samples_per_step": None,
        "status": "failed",
        "error": None,
        "timings": {"build_s": None, "compile_s": None, "run_s": None, "total_s": None},
        "report_files": [],
        "losses": [],
        "started": started,
        "finished": None,
        "profcompare_version": __version__,
        "execution": _execution_mode(spec["backend"]),
        "sessions": sessions,
        "exit_code": None,
        "traceback": None,
    }
    what = f"{'module ' if config['module'] else ''}{config['target']}"
    try:
        emit("building")
        popxl = _backend_popxl(spec["backend"])
        _instrument_sessions(popxl, job_dir, sessions, emit)
        if spec["backend"] == "sim":
            _child_environment(job_dir)
        os.chdir(config["cwd"])
        from profcompare.sim import run_program

        run_program(config["target"], config["args"], module=config["module"])
        info["status"], info["exit_code"] = "ok", 0
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            info["status"], info["exit_code"] = "ok", 0
        else:
            info["exit_code"] = code if isinstance(code, int) else 1
            detail = f": {code}" if not isinstance(code, int) else ""
            info["error"] = f"{what} exited with status {info['exit_code']}{detail}"
    except BaseException as exc:  # noqa: BLE001 - every failure of the program ends up in run.json
        if isinstance(exc, KeyboardInterrupt):
            info["error"] = "interrupted"
        else:
            if _is_out_of_memory(exc):
                info["status"] = "oom"
            text = str(exc).strip()  # the full text: whoever shows it folds it onto one line
            info["error"] = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            info["traceback"] = _program_traceback(exc)
            print(info["traceback"], file=sys.stderr, end="")
        info["exit_code"] = 1
    finally:
        os.chdir(job_dir)
    emit("writing report")
    info["timings"]["total_s"] = round(time.perf_counter() - t0, 3)
    found = find_report_files(job_dir)
    by_session = {f.split("/", 1)[0]: f for f in found}
    for s in sessions:
        s["report"] = by_session.get(s["directory"])
    # newest Session first, over the program's own and those of the Python processes it started
    ordered = sorted((f for f in found if _session_number(f) is not None), key=lambda f: _session_number(f) or 0,
                     reverse=True)
    info["report_files"] = ordered + [f for f in found if f not in ordered]
    if info["status"] == "ok" and not info["report_files"]:
        info["status"] = "failed"
        info["error"] = (f"{what} ran but created no popxl Session, so there is no report" if not sessions
                         else f"{what} created {len(sessions)} Session(s) but no report was written")
    if info["status"] == "ok":
        oom = _report_oom(job_dir / ordered[0].rsplit("/", 1)[0]) if ordered else None
        if oom:
            info["status"], info["error"] = "oom", oom
    info["finished"] = now_iso()
    write_json_atomic(job_dir / RUN_JSON, info)
    return info


def main(argv: list[str] | None = None) -> int:
    """Run one program; return 0 for status ok, 1 otherwise."""
    return child_main(run, "profcompare.runner.process.script_main", argv)


if __name__ == "__main__":
    sys.exit(main())
