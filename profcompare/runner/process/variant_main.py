"""Subprocess entry point of the runner: ``python -m profcompare.runner.process.variant_main SPEC_JSON``.

Runs one workload variant in the current directory (the job's directory) and writes
``run.json`` there (its fields are listed in docs/report-format.md). The environment carries everything else:
``POPLAR_ENGINE_OPTIONS`` (autoReport into this directory) and ``PROFCOMPARE_BACKEND``.

Progress goes to the parent as JSON lines (``{"stage": "compiling"}``) on the original stdout;
the process's fd 1 is pointed at stderr (the job's run.log) first, so nothing the workload or
the SDK prints can corrupt the protocol. Imports stay lean: no pandas/matplotlib here beyond
what the backend itself needs.

Exit code: 0 when the variant ran (status ok), 1 when run.json says oom or failed.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from profcompare.runner.process.parent_watch import exit_with_parent
from profcompare.errors import IpuOutOfMemoryError, ProfcompareError
from profcompare.runner.rundir import (
    RUN_JSON,
    RUN_SCHEMA_VERSION,
    find_report_files,
    now_iso,
    write_json_atomic,
)


def _open_protocol() -> IO[str]:
    """Keep the real stdout for the protocol; send everything else written to fd 1 to stderr.

    The protocol's descriptor is this process's alone: not inherited by programs it executes
    (``os.dup`` makes it close-on-exec) and closed in every process it forks, so no process the
    workload starts holds the runner's pipe open.
    """
    sys.stdout.flush()
    proto = private_stream(1, "w")
    os.dup2(2, 1)
    return proto


def private_stream(fd: int, mode: str) -> IO[str]:
    """A text stream on a duplicate of ``fd`` that is this process's alone: not inherited by
    programs it executes (``os.dup`` makes it close-on-exec) and closed in every process it forks."""
    stream = os.fdopen(os.dup(fd), mode, buffering=1 if "w" in mode else -1, encoding="utf-8")

    def close_in_child() -> None:
        try:
            stream.close()
        except (OSError, ValueError):
            pass

    os.register_at_fork(after_in_child=close_in_child)
    return stream


def _is_out_of_memory(exc: BaseException) -> bool:
    """Ours (IpuOutOfMemoryError) or the SDK's: popxl's Session constructor raises
    ``popart.OutOfMemoryException`` when Poplar cannot fit the graph (read from popart only when
    the SDK has already imported it)."""
    if isinstance(exc, IpuOutOfMemoryError):
        return True
    popart = sys.modules.get("popart")
    oom_type = getattr(popart, "OutOfMemoryException", None) if popart is not None else None
    return isinstance(oom_type, type) and isinstance(exc, oom_type)


def _addons_generation(backend: str) -> str | None:
    """The popxl-addons generation the workload spoke (None when it cannot be told)."""
    try:
        from profcompare import sdk

        return sdk.addons_generation(backend)
    except Exception:  # noqa: BLE001 - a failing workload has already said why
        return None


def _layout(workload: Any, variant: str, config: dict[str, Any]) -> dict[str, Any] | None:
    """The layout the variant chooses with ``config`` (``Workload.layout``; None for a workload
    that does not declare one, or when it cannot be resolved: the run then says why). Recorded
    before the run, so an out-of-memory run has it too."""
    resolve = getattr(workload, "layout", None)
    if resolve is None:
        return None
    try:
        return dict(resolve(variant, dict(config)))
    except Exception:  # noqa: BLE001 - the workload's own run reports a bad variant or config
        return None


def _execution_mode(backend: str) -> str:
    """How the program executes: numeric, or compile-only ($PROFCOMPARE_SIM_EXECUTION; the
    SDK always runs the program numerically)."""
    from profcompare.backend import execution_mode

    if backend == "sdk":
        return execution_mode.NUMERIC
    try:
        return execution_mode.current()
    except execution_mode.UnknownExecutionModeError:
        return execution_mode.NUMERIC  # refused by the parent before the child started


def _close_sessions(sessions: list[Any]) -> str | None:
    """Let every popxl Session the workload created be destroyed before its reports are listed:
    Poplar writes ``profile.pop`` under a temporary name and renames it only when the Engine (held
    by the Session) is destroyed. Returns a warning when a Session is still referenced."""
    def count_alive() -> int:
        return sum(ref() is not None for ref in sessions)

    if count_alive():
        # a Session still alive may be held only by a reference cycle, which a full collection
        # frees; when reference counting has freed them all, that collection (tens of ms over
        # the emulator's objects) is skipped
        import gc

        gc.collect()
    alive = count_alive()
    if alive:
        return (f"{alive} popxl Session(s) still referenced after the workload returned: their "
                "profile.pop may not be final (keep no Session alive past the run)")
    return None


def _instrument_session(emit: Callable[[str], None], timings: dict[str, float | None], marks: dict[str, float],
                        created: list[Any] | None = None) -> None:
    """Report compile/run stages by wrapping the backend's ``popxl.Session``.

    Session construction is where the program compiles (and where the autoReport graph profile is
    written); leaving the ``with session:`` block writes the execution profile.
    """
    try:
        from profcompare import sdk

        popxl = sdk.popxl
        original = popxl.Session
    except Exception:  # the workload reports its own failure later  # noqa: BLE001
        return

    class Session(original):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            start = time.perf_counter()
            timings["build_s"] = start - marks["start"]
            emit("compiling")
            if created is not None:
                created.append(weakref.ref(self))
            try:
                super().__init__(*args, **kwargs)
            finally:
                timings["compile_s"] = time.perf_counter() - start
                marks["run_start"] = time.perf_counter()
            emit("running")

        def __exit__(self, *exc: object) -> Any:
            timings["run_s"] = time.perf_counter() - marks.get("run_start", marks["start"])
            emit("writing report")
            return super().__exit__(*exc)

    Session.__name__ = Session.__qualname__ = original.__name__
    Session.__module__ = original.__module__
    # a process that runs many jobs gives the module its own class back after each (runner.in_process)
    Session._profcompare_wraps = original
    popxl.Session = Session  # type: ignore[misc]  # the backend module's class, replaced on purpose


def _load_workload(ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr or "WORKLOAD")


def stage_emitter(proto: IO[str]) -> Callable[[str], None]:
    """A function that reports a child's stage to the parent once per change of stage (one JSON
    line on the protocol stream); a parent that has gone away is ignored, run.json is what counts."""
    last: list[str] = []

    def emit(stage: str) -> None:
        if last and last[-1] == stage:
            return
        last.append(stage)
        try:
            proto.write(json.dumps({"stage": stage, "t": round(time.time(), 3)}) + "\n")
        except (OSError, ValueError):
            pass

    return emit


def _report_oom(directory: Path) -> str | None:
    """Why the report in ``directory`` says the program does not fit (None when it fits).

    With ``debug.allowOutOfMemory`` the engine does not raise, yet the program still does not
    fit: the run is "oom", never "ok". The report stays, flagged, for analysis.
    """
    from profcompare.readers import open_report, open_report_meta

    try:
        if not open_report_meta(directory).oom:  # a store's meta alone: its tables are read only when oom
            return None
        report = open_report(directory)
    except ProfcompareError:
        return None  # an unreadable report is reported by whoever opens it next
    tiles = report.tiles
    over = int((tiles["bytes_including_gaps"] > report.meta.target.bytes_per_tile).sum()) if len(tiles) else 0
    return f"out of memory (allowed by debug.allowOutOfMemory): {over} tiles over budget; the report is flagged oom"


def report_summary(report: Any) -> dict[str, float | None]:
    """The figures ``run.json`` keeps of a run's report (its ``summary``): every summary metric
    (:meth:`profcompare.model.Report.summary`, per replica) and the target's ``bytes_per_tile``
    and ``num_replicas``; None for what the report cannot say (NaN). ``report`` must carry the
    run's ``samples_per_step`` (``samples_per_second`` depends on it)."""
    import math

    values = {str(k): float(v) for k, v in report.summary().items()}
    values["bytes_per_tile"] = float(report.meta.target.bytes_per_tile)
    values["num_replicas"] = float(report.meta.target.num_replicas)
    return {k: (None if math.isnan(v) else v) for k, v in values.items()}


def _just_written(directory: Path, report_files: list[str]) -> Any:
    """The report file ``open_report(directory)`` would read, as this process wrote it (the
    simulator keeps the last Report it wrote to each file: no need to read it back); None when the
    report is not the simulator's or the file changed since."""
    engine = sys.modules.get("profcompare.emulator.engine")  # only when the simulator ran here
    if engine is None:
        return None
    for name in report_files:  # the first listed report file is the one open_report reads
        path = directory / name
        if path.is_file() and path.suffix != ".cbor" and path.name != RUN_JSON:
            return engine.written_report(path)
    return None


def _with_samples(report: Any, samples: Any) -> Any:
    """``report`` with the run's ``samples_per_step`` in its meta (as ``open_report`` gives it
    with run.json beside it). Only the meta changes, the tables are the report's own, already
    checked: the copy is not validated again (that would check every table a second time)."""
    if not samples or report.meta.samples_per_step == samples:
        return report
    return report.with_meta(report.meta.replace(samples_per_step=int(samples)))  # ReportMeta checks its own fields


def run(spec: dict[str, Any], emit: Callable[[str], None]) -> dict[str, Any]:
    """Run the variant described by ``spec``; write and return run.json's content."""
    from profcompare._version import __version__

    cwd = Path.cwd()
    started = now_iso()
    marks = {"start": time.perf_counter()}
    timings: dict[str, float | None] = {"build_s": None, "compile_s": None, "run_s": None, "total_s": None}
    sessions: list[Any] = []
    info: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "workload": spec["workload"],
        "variant": spec["variant"],
        "backend": spec["backend"],
        "config": spec["config"],
        "layout": None,
        "samples_per_step": None,
        "status": "failed",
        "error": None,
        "timings": timings,
        "report_files": [],
        "losses": [],
        "started": started,
        "finished": None,
        "profcompare_version": __version__,
        "execution": _execution_mode(spec["backend"]),
        "addons_generation": None,
        "warnings": [],
        "summary": None,
    }
    _forget_written()  # whatever an earlier job in this process left
    try:
        emit("building")
        _instrument_session(emit, timings, marks, sessions)
        workload = _load_workload(spec["workload_ref"])
        info["layout"] = _layout(workload, spec["variant"], spec["config"])
        result = workload.run(spec["variant"], dict(spec["config"]))
        info["status"] = "ok"
        info["backend"] = getattr(result, "backend", spec["backend"]) or spec["backend"]
        info["samples_per_step"] = int(result.samples_per_step)
        info["losses"] = [float(x) for x in result.losses]
        for key, attr in (("build_s", "build_seconds"), ("compile_s", "compile_seconds"), ("run_s", "run_seconds")):
            value = getattr(result, attr, None)
            if value is not None:
                timings[key] = float(value)
    except BaseException as exc:  # noqa: BLE001 - every failure must end up in run.json
        if _is_out_of_memory(exc):
            info["status"] = "oom"
        text = str(exc).strip()  # the full text: whoever shows it folds it onto one line
        if not isinstance(exc, ProfcompareError):
            text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            traceback.print_exc(file=sys.stderr)
        else:
            print(f"{type(exc).__name__}: {text}", file=sys.stderr)
        info["error"] = text
        if isinstance(exc, KeyboardInterrupt):
            info["error"] = "interrupted"
    emit("writing report")
    for key in ("build_s", "compile_s", "run_s"):
        if timings[key] is not None:
            timings[key] = round(float(timings[key]), 3)  # type: ignore[arg-type]
    timings["total_s"] = round(time.perf_counter() - marks["start"], 3)
    info["addons_generation"] = _addons_generation(info["backend"])
    result = None  # the workload's result may hold the Session: drop it before listing reports
    warning = _close_sessions(sessions)
    if warning:
        info["warnings"].append(warning)
    info["report_files"] = find_report_files(cwd)
    if info["status"] == "ok" and not info["report_files"]:
        info["status"] = "failed"
        info["error"] = "the variant ran but no report file (profile.pop / profile.sqlite) was written"
    kept = _just_written(cwd, info["report_files"]) if info["status"] in ("ok", "oom") else None
    if kept is not None:  # the report as the simulator wrote it: its figures without reading it back
        try:
            info["summary"] = report_summary(_with_samples(kept, info["samples_per_step"]))
        except Exception as exc:  # noqa: BLE001 - whoever needs the figures reads the report then
            info["warnings"].append(f"the report's summary figures could not be computed: {type(exc).__name__}: {exc}")
    if info["status"] == "ok" and info["report_files"] and (kept is None or kept.meta.oom):
        oom = _report_oom(cwd)
        if oom:
            info["status"] = "oom"
            info["error"] = oom
    _forget_written()
    info["finished"] = now_iso()
    write_json_atomic(cwd / RUN_JSON, info)
    return info


def _forget_written() -> None:
    """Drop the reports the simulator kept of this job (a process may run another job next)."""
    engine = sys.modules.get("profcompare.emulator.engine")
    if engine is not None:
        engine.forget_written()


def child_main(run_job: Callable[[dict[str, Any], Callable[[str], None]], dict[str, Any]], module: str,
               argv: list[str] | None = None) -> int:
    """The body of a child process of the runner: watch the parent, open the stage protocol, run
    ``run_job(spec, emit)`` on the one SPEC_JSON argument; return 0 for status ok, 1 otherwise
    (2 for a wrong command line)."""
    args = sys.argv[1:] if argv is None else argv
    exit_with_parent()
    emit = stage_emitter(_open_protocol())
    if len(args) != 1:
        print(f"usage: python -m {module} SPEC_JSON", file=sys.stderr)
        return 2
    info = run_job(json.loads(args[0]), emit)
    emit("done")
    return 0 if info["status"] == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    """Run one variant; return 0 for status ok, 1 otherwise."""
    return child_main(run, "profcompare.runner.process.variant_main", argv)


if __name__ == "__main__":
    sys.exit(main())
