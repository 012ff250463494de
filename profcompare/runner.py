"""Running workload variants in subprocesses with Poplar's autoReport, into run directories.

``profcompare run`` and ``profcompare sweep`` (and notebooks) go through this module:

1. :func:`make_jobs` validates variant names and knob values against the workload registry
   (``workloads``) before anything runs.
2. :func:`execute_jobs` runs every job in its own subprocess
   (``python -m profcompare._variant_main``) with ``POPLAR_ENGINE_OPTIONS`` asking for an
   autoReport into the job's directory and ``PROFCOMPARE_BACKEND`` set to the resolved
   backend. The child writes ``run.json`` (status ok | oom | failed) next to the report and
   reports its stages as JSON lines on its stdout.
3. The whole run is written to a hidden staging sibling (``<out>/.<name>.tmp-<pid>/``) and
   renamed to ``<out>/<name>/`` only when complete (comparisons and sweep tables included), so a
   run killed mid-way never leaves a directory that looks complete. An existing run is replaced
   only with ``force``, and only after the new run completed.
4. :func:`run_variants` compares the first variant (base) with each other one and writes
   ``compare-<base>-vs-<new>.html/.md/.json`` into the run directory.

Nothing here prints: progress goes to an optional callback; the CLI draws it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from profcompare.poplar_options import parse_options_object
from profcompare._parent_watch import PARENT_PID_VARIABLE
from profcompare.errors import (
    Terminated,
    OutputExistsError,
    ProfcompareError,
    WorkloadError,
)

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.compare import Comparison
    from profcompare.model import Report

#: ``run.json`` layout version (fields listed in docs/report-format.md).
RUN_SCHEMA_VERSION = 1
RUN_JSON = "run.json"
#: stderr of a job's subprocess (tracebacks, anything the SDK prints) lands here.
RUN_LOG = "run.log"
#: the module the subprocess runs (``python -m ...``)
CHILD_MODULE = "profcompare._variant_main"
#: report files a backend writes: Poplar's profile.pop (sdk) or our store file (sim)
REPORT_FILE_NAMES = ("profile.pop", "profile.sqlite")
#: stages a job goes through, in order, as the progress callback receives them
STAGES = ("queued", "starting", "building", "compiling", "running", "writing report", "done")
STATUSES = ("ok", "oom", "failed")
#: formats written for every comparison of a run: renderer name -> file extension
COMPARISON_FORMATS = (("html", "html"), ("markdown", "md"), ("json", "json"))

_STAGING_RE = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>\d+)$")

#: the label progress events of the final step (comparisons, sweep tables) carry
FINALIZE_LABEL = "*"
#: ``progress(label, stage, info)``: ``info`` is {} or, for "done", {"status": ..., "error": ...}
ProgressCallback = Callable[[str, str, Mapping[str, Any]], None]


# --------------------------------------------------------------------------------------------
# jobs and validation


@dataclass(frozen=True)
class Job:
    """One subprocess to run: a workload variant with a full config, written to ``<run>/<label>/``."""

    label: str
    workload: str
    workload_ref: str  # "module:attribute" the subprocess imports to find the Workload
    variant: str
    config: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))


def workload_registry() -> Any:
    try:
        import workloads
    except ImportError as exc:  # pragma: no cover - the package ships with profcompare
        raise WorkloadError(f"the workload registry cannot be imported: {exc}") from exc
    return workloads


def workload_ref(workload: Any) -> str:
    """Return ``"module:attribute"`` naming where ``workload`` (a Workload object) is defined.

    The subprocess imports this to find the same Workload, so a workload defined outside the
    ``workloads`` package (a plug-in module, a test module) runs exactly like a registered one.
    """
    module_name = getattr(getattr(workload, "run", None), "__module__", None)
    candidates = [module_name] if module_name else []
    candidates += [name for name, mod in list(sys.modules.items()) if name.startswith("workloads")]
    for name in candidates:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in vars(module).items():
            if value is workload:
                return f"{name}:{attr}"
    raise WorkloadError(
        f"workload {getattr(workload, 'name', workload)!r} is not a module-level attribute of an importable module"
    )


def normalise_knob_name(name: str) -> str:
    """``micro-batch`` / ``--micro-batch`` / ``micro_batch`` -> ``micro_batch``."""
    return name.strip().lstrip("-").replace("-", "_")


def find_knob(workload: Any, name: str) -> Any:
    """Return the Knob of ``workload`` called ``name`` (``-`` or ``_``), else raise WorkloadError listing the knobs."""
    wanted = normalise_knob_name(name)
    for knob in workload.knobs:
        if knob.name == wanted:
            return knob
    from workloads import did_you_mean

    names = [k.name for k in workload.knobs]
    raise WorkloadError(
        f"unknown knob {name!r} for workload {workload.name}{did_you_mean(wanted, names)}: valid knobs are {', '.join(names)}"
    )


def resolve_config(workload: Any, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Return the full config of ``workload`` with ``overrides`` (raw strings or typed values) applied.

    Knob names may use ``-`` or ``_``; values are parsed by the knob's type by the registry's
    ``parse_knobs`` (ints accept ``1e10``). Raises WorkloadError with a one-line message for an
    unknown knob or a bad value.
    """
    typed = {find_knob(workload, name).name: raw for name, raw in overrides.items()}
    return dict(workload_registry().parse_knobs(workload, typed))


def make_jobs(variants: Sequence[str], overrides: Mapping[str, Any] | None = None) -> list[Job]:
    """Validate ``variants`` and knob ``overrides`` (applied to every variant); return one Job each.

    Raises WorkloadError (one line, listing the valid choices) for an unknown variant, a variant
    given twice or a bad knob value -- before anything runs.
    """
    if not variants:
        raise WorkloadError("no variant given")
    registry = workload_registry()
    seen: set[str] = set()
    jobs = []
    for variant in variants:
        if variant in seen:
            raise WorkloadError(f"variant {variant!r} given twice")
        seen.add(variant)
        workload = registry.find_variant(variant)
        config = resolve_config(workload, overrides or {})
        jobs.append(Job(variant, workload.name, workload_ref(workload), variant, config))
    return jobs


# --------------------------------------------------------------------------------------------
# environment


def resolve_backend(name: str = "auto") -> str:
    """Return "sdk" or "sim" for ``name`` in auto | sdk | sim (auto = sdk when the SDK imports).

    Raises SdkUnavailableError for "sdk" without the SDK, WorkloadError for an unknown name.
    """
    if name not in ("auto", "sdk", "sim"):
        raise WorkloadError(f"unknown backend {name!r}: valid choices are auto, sdk, sim")
    if name == "sim":
        return "sim"
    from profcompare.sdk import resolve_backend as _resolve

    return str(_resolve(name))


def merge_engine_options(user_value: str | None, report_dir: str | os.PathLike[str]) -> str:
    """Return the ``POPLAR_ENGINE_OPTIONS`` JSON for a job: the user's options plus autoReport.

    ``autoReport.all`` = "true" and ``autoReport.directory`` = ``report_dir`` are set over the
    user's JSON object (their other keys are kept). Raises EngineOptionsError when the user's
    value is not a JSON object, names an unknown ``autoReport.*`` option or gives one a bad value
    (Poplar's own rules, as the simulator applies them), so a bad value is refused up front, once,
    not by every variant.
    """
    from profcompare.emulator.compile.engine_options import parse_engine_options

    parse_engine_options(user_value)
    options = parse_options_object(user_value)
    options["autoReport.all"] = "true"
    options["autoReport.directory"] = os.fspath(report_dir)
    return json.dumps(options)


def _module_root(module_name: str) -> str | None:
    """The sys.path entry a module was imported from (so a subprocess can import it too)."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve().parent
    depth = module_name.count(".")
    if Path(file).name == "__init__.py":
        depth += 1
    for _ in range(depth):
        path = path.parent
    return str(path)


def child_environment(
    job: Job, job_dir: Path, backend: str, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Return the environment of ``job``'s subprocess.

    ``POPLAR_ENGINE_OPTIONS`` merged (see :func:`merge_engine_options`), ``PROFCOMPARE_BACKEND``
    = ``backend``, and ``PYTHONPATH`` extended so the subprocess imports the same workload module.
    """
    env = dict(os.environ if environ is None else environ)
    env["POPLAR_ENGINE_OPTIONS"] = merge_engine_options(env.get("POPLAR_ENGINE_OPTIONS"), job_dir)
    env["PROFCOMPARE_BACKEND"] = backend
    env["PYTHONUNBUFFERED"] = "1"
    env[PARENT_PID_VARIABLE] = str(os.getpid())  # the child exits when this process is gone
    import site

    installed = {os.path.realpath(p) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    roots = []
    for module_name in (CHILD_MODULE.rsplit(".", 1)[0], job.workload_ref.split(":", 1)[0]):
        root = _module_root(module_name) or _module_root(module_name.split(".")[0])
        # installed packages import anyway; a source checkout or a plug-in module needs its root
        if root and root not in roots and os.path.realpath(root) not in installed:
            roots.append(root)
    existing = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(roots + [p for p in existing if p not in roots])
    return env


# --------------------------------------------------------------------------------------------
# run directories


def default_run_name(labels: Sequence[str], now: _dt.datetime | None = None, prefix: str = "") -> str:
    """``20261122-101500-onchip-vs-offchip-sharded`` (local time + labels joined by ``-vs-``)."""
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return "-".join(p for p in (stamp, prefix, "-vs-".join(labels)) if p)


#: Longest run name in bytes: the hidden staging name ``.NAME.tmp-PID`` must stay within the
#: 255-byte file-name limit of common file systems.
MAX_RUN_NAME_BYTES = 200


def check_run_name(name: str) -> str:
    """Return ``name`` if it can name a run directory, else raise WorkloadError saying why."""
    if not name or name in (".", "..") or name.startswith(".") or "/" in name or os.sep in name:
        raise WorkloadError(f"bad run name {name!r}: use a plain directory name (no '/', not starting with '.')")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name):
        raise WorkloadError(f"bad run name {name!r}: control characters and line breaks are not allowed")
    if len(os.fsencode(name)) > MAX_RUN_NAME_BYTES:
        raise WorkloadError(f"bad run name: {len(os.fsencode(name))} bytes long, at most {MAX_RUN_NAME_BYTES}")
    return name


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftover_staging(out: Path) -> list[Path]:
    """Hidden ``.NAME.tmp-PID`` / ``.NAME.old-PID`` entries in ``out`` whose process is gone.

    They are what a killed run leaves behind (its process can no longer finish or publish them).
    Entries of live processes (runs in progress) are not included.
    """
    if not out.is_dir():
        return []
    found = []
    for entry in out.iterdir():
        match = _STAGING_RE.match(entry.name)
        if match and not _pid_alive(int(match["pid"])):
            found.append(entry)
    return sorted(found)


def _remove_entry(path: Path) -> None:
    """Remove a directory tree, a file or a symlink (never following the link)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def remove_stale_staging(out: Path) -> list[Path]:
    """Delete every leftover of killed runs in ``out`` (see :func:`leftover_staging`); return them.

    Any run name's leftovers go: the process that could have used them is gone.
    """
    removed = leftover_staging(out)
    for entry in removed:
        _remove_entry(entry)
    return removed


def find_report_files(directory: Path) -> list[str]:
    """Report files (profile.pop / profile.sqlite) under ``directory``, as sorted relative paths.

    Poplar writes straight into autoReport.directory for popxl, or into one engine-named
    subdirectory for named engines, so the search is recursive; top-level files come first.
    """
    found = [p for p in directory.rglob("*") if p.name in REPORT_FILE_NAMES and p.is_file()]
    rel = [p.relative_to(directory).as_posix() for p in found]
    return sorted(rel, key=lambda r: (r.count("/"), REPORT_FILE_NAMES.index(r.rsplit("/", 1)[-1]), r))


def now_iso() -> str:
    """The current local time, ISO-8601 with UTC offset, millisecond precision."""
    return _dt.datetime.now().astimezone().isoformat(timespec="milliseconds")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` via a temporary file and os.replace."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_run_json(directory: Path) -> dict[str, Any] | None:
    """The parsed ``run.json`` in ``directory``, or None when absent or unreadable."""
    try:
        data = json.loads((directory / RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class JobOutcome:
    """What happened to one job: its final directory and its ``run.json``."""

    job: Job
    directory: Path  # final location: <out>/<name>/<label>
    info: Mapping[str, Any]  # run.json

    @property
    def label(self) -> str:
        """The job's directory name (the variant for ``run``, the point label for ``sweep``)."""
        return self.job.label

    @property
    def status(self) -> str:
        """ok | oom | failed."""
        return str(self.info.get("status", "failed"))

    @property
    def error(self) -> str | None:
        """One-line error text, or None."""
        return self.info.get("error")

    @property
    def report_files(self) -> tuple[str, ...]:
        """Report files relative to :attr:`directory`."""
        return tuple(self.info.get("report_files") or ())

    @property
    def has_report(self) -> bool:
        """True when the job left a report (always for ok, usually for oom)."""
        return bool(self.report_files)


@dataclass(frozen=True)
class ComparisonOutcome:
    """One comparison of a run: base vs new, and the files written for it (format -> path)."""

    base: str
    new: str
    comparison: Comparison | None
    files: Mapping[str, Path]
    error: str | None = None  # why the comparison could not be made (the run is kept anyway)


@dataclass(frozen=True)
class RunResult:
    """A finished run: where it lives, which backend ran it, what happened to every job."""

    name: str
    directory: Path
    backend: str
    outcomes: tuple[JobOutcome, ...]
    wall_seconds: float
    comparisons: tuple[ComparisonOutcome, ...] = ()
    files: Mapping[str, Path] = field(default_factory=dict)  # extra files (sweep tables)
    replaced: bool = False  # an existing run of the same name was replaced (force)

    @property
    def ok(self) -> bool:
        """True when every job finished with status ok and every comparison could be made."""
        return all(o.status == "ok" for o in self.outcomes) and not any(c.error for c in self.comparisons)

    def outcome(self, label: str) -> JobOutcome:
        """The outcome of the job labelled ``label`` (KeyError if none)."""
        for o in self.outcomes:
            if o.label == label:
                return o
        raise KeyError(label)

    def open_report(self, label: str) -> Report:
        """Open the report of job ``label`` (ReportFormatError when it has none)."""
        from profcompare.readers import open_report

        return open_report(self.outcome(label).directory)


# --------------------------------------------------------------------------------------------
# executing jobs


class _ChildTracker:
    """The live subprocesses of a run, so an interrupted run can stop them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self.cancelled = False

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def terminate_all(self) -> None:
        with self._lock:
            self.cancelled = True
            procs = list(self._procs)
        for proc in procs:
            with contextlib.suppress(OSError):
                proc.terminate()
        deadline = time.monotonic() + 3.0
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    proc.kill()


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


def _failed_info(job: Job, backend: str, error: str, started: str, total_s: float, job_dir: Path) -> dict[str, Any]:
    from profcompare._version import __version__

    return {
        "schema_version": RUN_SCHEMA_VERSION,
        "workload": job.workload,
        "variant": job.variant,
        "backend": backend,
        "config": dict(job.config),
        "samples_per_step": None,
        "status": "failed",
        "error": error,
        "timings": {"build_s": None, "compile_s": None, "run_s": None, "total_s": round(total_s, 3)},
        "report_files": find_report_files(job_dir),
        "losses": [],
        "started": started,
        "finished": now_iso(),
        "profcompare_version": __version__,
    }


def _last_error_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _run_one(
    job: Job,
    job_dir: Path,
    backend: str,
    environ: Mapping[str, str] | None,
    progress: ProgressCallback | None,
    tracker: _ChildTracker,
) -> dict[str, Any]:
    """Run ``job`` in a subprocess in ``job_dir``; return its run.json (written if the child could not)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    started, t0 = now_iso(), time.perf_counter()
    spec = {
        "workload": job.workload,
        "workload_ref": job.workload_ref,
        "variant": job.variant,
        "config": dict(job.config),
        "backend": backend,
    }
    env = child_environment(job, job_dir.resolve(), backend, environ)
    if progress:
        progress(job.label, "starting", {})
    with open(job_dir / RUN_LOG, "wb") as log:
        if tracker.cancelled:
            raise KeyboardInterrupt
        proc = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE, json.dumps(spec)],
            cwd=job_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        tracker.add(proc)
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("stage") in STAGES and progress:
                stage = event["stage"]
                if stage != "done":  # "done" is reported below, once run.json is known
                    progress(job.label, stage, {})
        returncode = proc.wait()
        # only a finished child leaves the tracker: if this is interrupted, the run stops it
        tracker.discard(proc)
    info = read_run_json(job_dir)
    if info is None:
        how = f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"
        detail = _last_error_line(job_dir / RUN_LOG)
        error = f"variant process {how} before writing {RUN_JSON}" + (f": {detail}" if detail else "")
        info = _failed_info(job, backend, error, started, time.perf_counter() - t0, job_dir)
        write_json_atomic(job_dir / RUN_JSON, info)
    if progress:
        progress(job.label, "done", {"status": info.get("status", "failed"), "error": info.get("error")})
    return info


def _prepare_out(out: Path, name: str, force: bool) -> Path:
    check_run_name(name)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out)
    final = out / name
    if os.path.lexists(final) and not force:
        raise OutputExistsError(f"run directory {final} already exists (use --force to replace it, or --name)")
    staging = out / f".{name}.tmp-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    return staging


def _publish(staging: Path, final: Path, force: bool) -> bool:
    """Rename the complete ``staging`` dir to ``final``; returns True when an old run was replaced."""
    replaced = False
    old: Path | None = None
    if os.path.lexists(final):  # a file or a (dangling) symlink is in the way too
        if not force:
            raise OutputExistsError(f"run directory {final} already exists (use --force to replace it, or --name)")
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        if os.path.lexists(old):
            _remove_entry(old)
        os.replace(final, old)
        replaced = True
    os.replace(staging, final)
    if old is not None:
        _remove_entry(old)
    return replaced


Finalizer = Callable[["RunResult", Path], "RunResult"]


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
) -> RunResult:
    """Run ``jobs`` (each in its own subprocess, ``parallel`` at a time) into ``<out>/<name>/<label>/``.

    Returns a RunResult whose paths are final. ``finalize(result, staging_dir)`` is called once
    every job finished, before the run becomes visible, to add files (comparisons, tables) to
    the staging directory; it returns the RunResult to publish. Raises OutputExistsError when
    the run exists and not ``force``, EngineOptionsError for a malformed user
    POPLAR_ENGINE_OPTIONS; a failing job never raises (see its status). If interrupted, the
    subprocesses are stopped, the staging directory removed, and the exception re-raised.
    """
    if not jobs:
        raise WorkloadError("nothing to run")
    labels = [j.label for j in jobs]
    if len(set(labels)) != len(labels):
        raise WorkloadError(f"job labels must be unique, got {labels}")
    for label in labels:
        check_run_name(label)
    resolved = resolve_backend(backend)
    user_options = (os.environ if environ is None else environ).get("POPLAR_ENGINE_OPTIONS")
    merge_engine_options(user_options, "check")  # fail before anything runs
    parallel = max(1, int(parallel))
    out_path = Path(out)
    final = out_path / name
    staging = _prepare_out(out_path, name, force)
    tracker = _ChildTracker()
    t0 = time.perf_counter()
    restore_signals = _interrupt_on_termination()
    try:
        if progress:
            for job in jobs:
                progress(job.label, "queued", {})
        if parallel == 1 or len(jobs) == 1:
            infos = [_run_one(job, staging / job.label, resolved, environ, progress, tracker) for job in jobs]
        else:
            with ThreadPoolExecutor(max_workers=min(parallel, len(jobs))) as pool:
                futures = [
                    pool.submit(_run_one, job, staging / job.label, resolved, environ, progress, tracker)
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
            if progress:
                progress(FINALIZE_LABEL, "running", {})
            result = finalize(result, staging)
            if progress:
                progress(FINALIZE_LABEL, "done", {"status": "ok", "error": None})
        replaced = _publish(staging, final, force)
    except BaseException:
        tracker.terminate_all()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        restore_signals()
    return replace_result(result, wall_seconds=time.perf_counter() - t0, replaced=replaced)


def replace_result(result: RunResult, **changes: Any) -> RunResult:
    import dataclasses

    return dataclasses.replace(result, **changes)


# --------------------------------------------------------------------------------------------
# comparisons and the one-call API


def open_staged_report(outcome: JobOutcome, staging: Path) -> Report:
    """Open ``outcome``'s report from the staging directory, labelled with its final path."""
    from profcompare.readers import open_report

    report = open_report(staging / outcome.label)
    import dataclasses

    return dataclasses.replace(report, meta=report.meta.replace(source=str(outcome.directory)))


def _prewarm_comparison_imports() -> None:
    """Import the comparison and rendering stack while the subprocesses work (saves wall time)."""

    def work() -> None:
        with contextlib.suppress(Exception):
            import profcompare.compare
            import profcompare.readers  # noqa: F401
            from profcompare.render.base import get_renderer

            get_renderer("html")

    threading.Thread(target=work, name="profcompare-prewarm", daemon=True).start()


def compare_outcomes(result: RunResult, staging: Path, *, top: int = 20) -> tuple[ComparisonOutcome, ...]:
    """Compare the first job (base) with every other job that has a report.

    Writes ``compare-<base>-vs-<new>.html``, ``.md`` and ``.json`` into ``staging`` and returns one
    ComparisonOutcome each (file paths final). No comparison when the base has no report. A
    comparison that cannot be made (an unreadable report, say) does not raise: its outcome
    carries the error and no files, so the run itself is still published.
    """
    from profcompare.compare import compare
    from profcompare.render.base import get_renderer
    from profcompare.render.output import write_output

    base = result.outcomes[0]
    others = [o for o in result.outcomes[1:] if o.has_report]
    if not base.has_report or not others:
        return ()
    renderers = [(get_renderer(fmt), ext) for fmt, ext in COMPARISON_FORMATS]
    base_report: Report | None = None
    comparisons = []
    for other in others:
        files: dict[str, Path] = {}
        stem = f"compare-{base.label}-vs-{other.label}"
        try:
            if base_report is None:
                base_report = open_staged_report(base, staging)
            comparison = compare(base_report, open_staged_report(other, staging))
            for renderer, ext in renderers:
                # the json export is complete; the pages are cut to the top rows
                content = renderer.render(comparison, top=0 if renderer.name in ("json", "csv") else (top or 20))
                write_output(content, staging / f"{stem}.{ext}")
                files[renderer.name] = result.directory / f"{stem}.{ext}"
        except Exception as exc:  # noqa: BLE001 - the runs are worth keeping even if a comparison fails
            for ext in (e for _, e in COMPARISON_FORMATS):
                (staging / f"{stem}.{ext}").unlink(missing_ok=True)
            error = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, ProfcompareError):
                error = f"{type(exc).__name__}: {error}"
            comparisons.append(ComparisonOutcome(base.label, other.label, None, MappingProxyType({}), error))
            continue
        comparisons.append(ComparisonOutcome(base.label, other.label, comparison, MappingProxyType(files)))
    return tuple(comparisons)


def run_variants(
    variants: Sequence[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    backend: str = "auto",
    out: str | os.PathLike[str] = "reports",
    name: str | None = None,
    jobs: int = 1,
    force: bool = False,
    top: int = 20,
    progress: ProgressCallback | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunResult:
    """Build and run ``variants`` with autoReport, then compare the first with each other one.

    ``overrides`` maps knob names to values (strings are parsed) applied to every variant.
    Returns the RunResult (``comparisons`` filled); the run lives in ``<out>/<name>/`` with one
    directory per variant plus ``compare-<base>-vs-<new>.{html,md,json}``. ``name`` defaults to
    the local timestamp plus the variants. Raises WorkloadError for bad variants or knob values,
    OutputExistsError when the run exists and not ``force``.
    """
    job_list = make_jobs(variants, overrides)
    if name is not None:
        run_name = check_run_name(name)
    else:
        run_name = unique_run_name(Path(out), default_run_name([j.label for j in job_list]))
    if len(job_list) > 1:
        _prewarm_comparison_imports()

    def finalize(result: RunResult, staging: Path) -> RunResult:
        return replace_result(result, comparisons=compare_outcomes(result, staging, top=top))

    return execute_jobs(
        job_list,
        out=out,
        name=run_name,
        backend=backend,
        parallel=jobs,
        force=force,
        progress=progress,
        environ=environ,
        finalize=finalize,
    )


def unique_run_name(out: Path, name: str) -> str:
    candidate, n = name, 2
    while (out / candidate).exists():
        candidate, n = f"{name}-{n}", n + 1
    return candidate


# --------------------------------------------------------------------------------------------
# listing runs


@dataclass(frozen=True)
class RunListing:
    """One run directory under an output root, as ``profcompare runs`` shows it."""

    name: str
    directory: Path
    kind: str  # "run" | "sweep"
    jobs: tuple[tuple[str, Mapping[str, Any]], ...]  # (label, run.json) per job, in start order
    backend: str
    started: str | None
    swept: tuple[str, ...] = ()  # the knobs a sweep varies (from sweep.json)

    @property
    def variants(self) -> tuple[str, ...]:
        """The distinct variants of the run, in start order."""
        return tuple(dict.fromkeys(str(info.get("variant", label)) for label, info in self.jobs))

    @property
    def status(self) -> str:
        """ok when every job is ok, else the worst status (failed > oom)."""
        statuses = {str(info.get("status", "failed")) for _, info in self.jobs}
        for s in ("failed", "oom"):
            if s in statuses:
                return s
        return "ok"


def list_runs(out: str | os.PathLike[str] = "reports") -> list[RunListing]:
    """The runs under ``out`` (newest first), read from each job's ``run.json``.

    Hidden directories (staging directories of runs in progress or killed) and directories
    without any ``run.json`` are ignored. Returns [] when ``out`` does not exist.
    """
    root = Path(out)
    if not root.is_dir():
        return []
    listings = []
    for entry in root.iterdir():
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        jobs = []
        for sub in sorted(entry.iterdir()):
            if sub.is_dir() and not sub.name.startswith("."):
                info = read_run_json(sub)
                if info is not None:
                    jobs.append((sub.name, MappingProxyType(info)))
        if not jobs:
            continue
        jobs.sort(key=lambda job: str(job[1].get("started") or ""))  # stable: ties keep name order
        backends = sorted({str(info.get("backend", "?")) for _, info in jobs})
        starts = sorted(str(info["started"]) for _, info in jobs if info.get("started"))
        kind = "run"
        swept: tuple[str, ...] = ()
        if (entry / "sweep.json").exists():
            kind = "sweep"
            with contextlib.suppress(OSError, ValueError, TypeError):
                swept = tuple(str(k) for k in json.loads((entry / "sweep.json").read_text(encoding="utf-8"))["swept"])
        listings.append(
            RunListing(entry.name, entry, kind, tuple(jobs), "/".join(backends), starts[0] if starts else None, swept)
        )
    listings.sort(key=lambda r: (r.started or "", r.name), reverse=True)
    return listings


__all__ = [
    "COMPARISON_FORMATS",
    "RUN_JSON",
    "RUN_SCHEMA_VERSION",
    "MAX_RUN_NAME_BYTES",
    "STAGES",
    "STATUSES",
    "ComparisonOutcome",
    "Job",
    "JobOutcome",
    "ProgressCallback",
    "RunListing",
    "RunResult",
    "check_run_name",
    "child_environment",
    "compare_outcomes",
    "default_run_name",
    "execute_jobs",
    "find_knob",
    "find_report_files",
    "leftover_staging",
    "list_runs",
    "make_jobs",
    "merge_engine_options",
    "normalise_knob_name",
    "now_iso",
    "open_staged_report",
    "read_run_json",
    "remove_stale_staging",
    "replace_result",
    "resolve_backend",
    "resolve_config",
    "run_variants",
    "unique_run_name",
    "workload_ref",
    "workload_registry",
    "write_json_atomic",
]
