"""How a run executes: each job in its own process (``python -m profcompare.runner.process.variant_main``, or
that module's code in a child forked from this process: :mod:`profcompare.runner.forked`) with ``POPLAR_ENGINE_OPTIONS`` asking for an autoReport into the job's directory, child
tracking, and signals (SIGTERM/SIGHUP clean up like Ctrl-C; children die with the runner).

Each subprocess leads a process group of its own, ended with it on every exit path (see
:mod:`profcompare.runner.process_group`), and the stage protocol is read only while the
subprocess lives: a process it started never keeps the run waiting.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from profcompare.backend import execution_mode
from profcompare.errors import (
    ProfcompareError,
    Terminated,
    WorkloadError,
)
from profcompare.runner.results import FINALIZE_LABEL, JobOutcome, ProgressCallback, RunResult, STAGES, replace_result
from profcompare.runner import forked
from profcompare.runner.plan import Job, check_run_name, merge_engine_options, resolve_backend
from profcompare.runner.process_group import GRACE_SECONDS, end_groups
from profcompare.runner.rundir import RUN_JSON, RUN_LOG, _prepare_out, _publish, find_report_files, now_iso, read_run_json, write_json_atomic
from profcompare.runner.staging import Staging
from profcompare.runner.child import (
    CHILD_MODULE,
    VARIANT_THREAD_VARIABLES,
    child_environment,
    failed_info,
    has_exited,
    import_roots,
    last_error_line,
)

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.runner.engine import Engine


#: how long the protocol pipe is waited on before the subprocess is looked at again (seconds)
_POLL_SECONDS = 0.2

#: at most this much of the protocol is read once the subprocess has ended (a process that left
#: its group may keep writing to a copy of the pipe)
_DRAIN_LIMIT_BYTES = 1 << 20


class _ChildTracker:
    """The live subprocesses of a run, so an interrupted run can stop them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes] | forked.ForkedChild] = set()
        self.cancelled = False

    def add(self, proc: subprocess.Popen[bytes] | forked.ForkedChild) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes] | forked.ForkedChild) -> None:
        with self._lock:
            self._procs.discard(proc)

    def terminate_all(self) -> None:
        """End every tracked subprocess with its whole process group (see :mod:`.process_group`)."""
        with self._lock:
            self.cancelled = True
            procs = list(self._procs)
        end_groups([proc.pid for proc in procs])
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=GRACE_SECONDS)


#: signals that end a run like Ctrl-C does (``kill``, a CI timeout, a closed terminal)
_TERMINATION_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


def _interrupt_on_termination() -> Callable[[], None]:
    """Make SIGTERM / SIGHUP raise KeyboardInterrupt while a run executes; return the undo function.

    By default those signals kill the process on the spot, leaving its variant subprocesses
    running and its staging directory behind; as an exception they go through the same cleanup
    as Ctrl-C. Only the main thread can install handlers, and handlers someone else installed
    are left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, _frame: Any) -> None:
        raise Terminated(signum)

    previous: dict[int, Any] = {}
    for signum in _TERMINATION_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            previous[signum] = signal.signal(signum, interrupt)

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return restore


def _read_events(proc: subprocess.Popen[bytes] | forked.ForkedChild,
                 on_event: Callable[[dict[str, Any]], None]) -> None:
    """Pass each JSON line of ``proc``'s stdout (the stage protocol) to ``on_event`` until ``proc``
    has exited; then end its process group and read what is left in the pipe.

    The end of the pipe is not waited for: a process the program started may hold a copy of it
    and outlive the program (it is ended with the group, unless it left the group).
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = bytearray()

    def dispatch() -> None:
        *lines, rest = bytes(buffer).split(b"\n")
        buffer[:] = rest
        for raw in lines:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict):
                on_event(event)

    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        open_ = True
        while open_ and not has_exited(proc, block=False):
            if selector.select(timeout=_POLL_SECONDS):
                chunk = os.read(fd, 65536)
                open_ = bool(chunk)
                buffer += chunk
                dispatch()
        has_exited(proc, block=True)  # at once, unless the program closed the pipe and lives on
        # the program has ended: processes it left behind in its group end with it (before it is
        # reaped, so its pid, the group's id, cannot have been reused)
        end_groups([proc.pid])
        left = _DRAIN_LIMIT_BYTES
        while open_ and left > 0 and selector.select(timeout=0):
            chunk = os.read(fd, min(65536, left))
            open_ = bool(chunk)
            left -= len(chunk)
            buffer += chunk
        dispatch()


def _run_one(
    job: Job,
    staging: Staging,
    backend: str,
    environ: Mapping[str, str] | None,
    progress: ProgressCallback | None,
    tracker: _ChildTracker,
    execution: str | None = None,
) -> dict[str, Any]:
    """Run ``job`` in a subprocess in its directory of ``staging``; return its run.json (written if
    the child could not). Raises StagingLostError when the staging directory was taken away."""
    job_dir = staging.path / job.label
    staging.check()
    try:
        job_dir.mkdir(exist_ok=True)  # never parents: a vanished staging directory is not made again
    except FileNotFoundError:
        raise staging.lost() from None
    started, t0 = now_iso(), time.perf_counter()
    spec = {
        "workload": job.workload,
        "workload_ref": job.workload_ref,
        "variant": job.variant,
        "config": dict(job.config),
        "backend": backend,
    }
    env = child_environment(job, job_dir.resolve(), backend, environ, execution)
    if progress:
        progress(job.label, "starting", {})

    def on_event(event: dict[str, Any]) -> None:
        stage = event.get("stage")
        if stage in STAGES and stage != "done" and progress:  # "done" is reported below, once run.json is known
            progress(job.label, stage, {})

    with open(job_dir / RUN_LOG, "wb") as log:
        if tracker.cancelled:
            raise KeyboardInterrupt
        proc: subprocess.Popen[bytes] | forked.ForkedChild
        if forked.can_fork(job, backend, env):
            forked.preload(job)
            proc = forked.start(spec, env, job_dir.resolve(), log)
        else:
            proc = subprocess.Popen(
                [sys.executable, "-m", job.child or CHILD_MODULE, json.dumps(spec)],
                cwd=job_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,  # a process group of its own: whatever the program starts ends with it
            )
        tracker.add(proc)
        try:
            _read_events(proc, on_event)
        finally:
            assert proc.stdout is not None
            proc.stdout.close()
        returncode = proc.wait()
        # only a finished child leaves the tracker: if this is interrupted, the run stops it
        tracker.discard(proc)
    info = read_run_json(job_dir)
    if info is None:
        staging.check()  # a run.json missing because the directory went is the run's loss, not the job's
        how = f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"
        detail = last_error_line(job_dir / RUN_LOG)
        error = f"variant process {how} before writing {RUN_JSON}" + (f": {detail}" if detail else "")
        info = failed_info(job, backend, error, started, time.perf_counter() - t0, job_dir)
        write_json_atomic(job_dir / RUN_JSON, info)
    if progress:
        progress(job.label, "done", {"status": info.get("status", "failed"), "error": info.get("error")})
    return info


def _session_order(report_file: str) -> tuple[int, str]:
    """Sort key of a report file by the number of its ``session-N`` directory (newest last)."""
    top = report_file.split("/", 1)[0]
    number = top.rpartition("-")[2]
    return (int(number) if top.startswith("session-") and number.isdigit() else -1, report_file)


def _publish_incomplete(jobs: Sequence[Job], staging: Any, final: Path, backend: str, force: bool,
                        exc: BaseException, total_s: float) -> bool:
    """Publish an interrupted run when some job had written a Session report: return True then.

    A report file is complete once it exists (the store writes a temporary file and renames it).
    Every started job without its own run.json gets one with status ``incomplete`` naming the
    reports kept; the run is then published as a finished one would be (the staging lock is held
    until the rename). Jobs that never started are left out. Nothing is published (False) when no
    job has a report, or when publishing fails (the staging directory is then discarded)."""
    started = [(job, staging.path / job.label) for job in jobs if (staging.path / job.label).is_dir()]
    if not any(find_report_files(job_dir) for _, job_dir in started):
        return False
    try:
        for job, job_dir in started:
            if read_run_json(job_dir) is not None:
                continue
            reports = find_report_files(job_dir)
            info = failed_info(job, backend, f"{exc or 'interrupted'}: stopped before the program finished; "
                                f"{len(reports)} report(s) written until then kept", now_iso(), total_s, job_dir)
            info["status"] = "incomplete"
            info["report_files"] = sorted(reports, key=_session_order, reverse=True)
            write_json_atomic(job_dir / RUN_JSON, info)
        _publish(staging, final, force)
    except Exception:  # noqa: BLE001 - an interrupted run that cannot be kept is discarded as before
        return False
    return True


Finalizer = Callable[["RunResult", Path], "RunResult"]


def check_execution(execution: str | None, backend: str, environ: Mapping[str, str] | None = None) -> str:
    """Return the execution mode jobs run in (``execution``, else the environment's); raise
    ProfcompareError for an unknown mode, or compile-only with the SDK backend (Poplar has no
    such mode: the SDK always runs the program)."""
    try:
        mode = execution_mode.normalise(execution) if execution is not None else execution_mode.current(environ)
    except execution_mode.UnknownExecutionModeError as exc:
        raise ProfcompareError(str(exc)) from None
    if mode == execution_mode.COMPILE_ONLY and backend == "sdk":
        raise ProfcompareError("compile-only execution is a simulator mode; with the SDK backend Poplar runs the "
                               "program (drop --compile-only or use --backend sim)")
    return mode


def execute_jobs(
    jobs: Sequence[Job],
    *,
    out: str | os.PathLike[str] = "reports",
    name: str,
    backend: str = "auto",
    parallel: int = 1,
    force: bool = False,
    progress: ProgressCallback | None = None,
    environ: Mapping[str, str] | None = None,
    finalize: Finalizer | None = None,
    execution: str | None = None,
    keep_incomplete: bool = False,
    engine: Engine | None = None,
) -> RunResult:
    """Run ``jobs`` (each in its own subprocess, ``parallel`` at a time) into ``<out>/<name>/<label>/``.

    Returns a RunResult whose paths are final. ``finalize(result, staging_dir)`` is called once
    every job finished, before the run becomes visible, to add files (comparisons, tables) to
    the staging directory; it returns the RunResult to publish. Raises OutputExistsError when
    the run exists and not ``force``, EngineOptionsError for a malformed user
    POPLAR_ENGINE_OPTIONS; a failing job never raises (see its status). If interrupted, the
    subprocesses are stopped, the staging directory removed, and the exception re-raised; with
    ``keep_incomplete`` (``profile``) a run whose jobs had written a report by then is published
    instead, each unfinished job with status ``incomplete`` (:func:`_publish_incomplete`).

    ``execution`` ("numeric" | "compile-only"; None = ``$PROFCOMPARE_SIM_EXECUTION``, else
    numeric) is how the simulator executes the jobs; compile-only needs the sim backend
    (ProfcompareError otherwise), and a bad mode is refused before anything runs.

    ``engine`` (see :func:`profcompare.runner.make_engine`): when given, workload-variant jobs run
    on it -- warm worker processes of a local pool, or a Dask cluster -- instead of one fresh
    subprocess each; ``parallel`` is then the engine's business. The caller owns the engine (and
    closes it). Jobs running a user's program (``profile``) always get a fresh subprocess.
    """
    if not jobs:
        raise WorkloadError("nothing to run")
    labels = [j.label for j in jobs]
    if len(set(labels)) != len(labels):
        raise WorkloadError(f"job labels must be unique, got {labels}")
    for label in labels:
        check_run_name(label)
    resolved = resolve_backend(backend)
    check_execution(execution, resolved, environ)
    user_options = (os.environ if environ is None else environ).get("POPLAR_ENGINE_OPTIONS")
    merge_engine_options(user_options, "check")  # fail before anything runs
    parallel = max(1, int(parallel))
    out_path = Path(out)
    final = out_path / name
    staging = _prepare_out(out_path, name, force)
    replaced = False
    tracker = _ChildTracker()
    t0 = time.perf_counter()
    restore_signals = _interrupt_on_termination()
    try:
        if progress:
            for job in jobs:
                progress(job.label, "queued", {})
        if engine is not None and all(job.child is None for job in jobs):
            infos = engine.run_jobs(jobs, staging, backend=resolved, environ=environ, progress=progress,
                                    execution=execution)
        elif parallel == 1 or len(jobs) == 1:
            infos = [_run_one(job, staging, resolved, environ, progress, tracker, execution) for job in jobs]
        else:
            with ThreadPoolExecutor(max_workers=min(parallel, len(jobs))) as pool:
                futures = [
                    pool.submit(_run_one, job, staging, resolved, environ, progress, tracker, execution)
                    for job in jobs
                ]
                try:
                    infos = [f.result() for f in futures]
                except BaseException:
                    tracker.terminate_all()
                    for f in futures:
                        f.cancel()
                    raise
        outcomes = tuple(
            JobOutcome(job, final / job.label, MappingProxyType(info)) for job, info in zip(jobs, infos)
        )
        result = RunResult(name, final, resolved, outcomes, time.perf_counter() - t0)
        if finalize is not None:
            staging.check()
            if progress:
                progress(FINALIZE_LABEL, "running", {})
            result = finalize(result, staging.path)
            if progress:
                progress(FINALIZE_LABEL, "done", {"status": "ok", "error": None})
        replaced = _publish(staging, final, force)
    except BaseException as exc:
        tracker.terminate_all()
        if not (keep_incomplete and isinstance(exc, KeyboardInterrupt) and _publish_incomplete(jobs, staging, final, resolved, force, exc,
                                                                            time.perf_counter() - t0)):
            staging.discard()
        raise
    finally:
        restore_signals()
    return replace_result(result, wall_seconds=time.perf_counter() - t0, replaced=replaced)


__all__ = ["CHILD_MODULE", "Finalizer", "VARIANT_THREAD_VARIABLES", "check_execution", "child_environment", "execute_jobs",
           "import_roots"]
