"""The Dask engine: every workload-variant job is a task on a Dask cluster.

``make_engine(dask="local:2")`` starts a ``distributed.LocalCluster`` of single-threaded worker
processes on this machine; ``make_engine(dask="tcp://host:8786")`` connects to a running
scheduler (a short timeout: a bad address fails at once, before anything runs). Each job is one
task, :func:`run_point`: it runs the job in a temporary directory on the worker, in the worker's
warm process (:func:`profcompare.runner.in_process.run_job_here`), and RETURNS the job's files
(report, run.json, run.log) as bytes, so workers need no storage shared with the client; the
client writes them into the run's staging directory, atomically per file, as each task ends.
The stages a point goes through (building, compiling, running...) reach the progress callback
as Dask events (``Worker.log_event``) while it runs.

Workers need profcompare installed, the same version as the client (a point run on a worker with
another version fails, saying so), and the workload's module importable.

A worker that dies under a task (``os._exit``, a signal, the nanny's memory limit) loses only
that point: the scheduler runs it again once, then the point is "failed" with the reason
(:data:`LOCAL_SCHEDULER_CONFIG` for the LocalCluster started here; a remote scheduler applies its
own settings: ``allowed-failures`` 3 by default, and its default worker-saturation queues a task
behind the running one, which a dying worker then takes down too). Interrupting the run cancels
every task.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from profcompare.backend.knobs import MAX_LOCAL_WORKERS
from profcompare.errors import ProfcompareError
from profcompare.runner.engine import ATTEMPTS, Engine, job_spec, prepare_job_dir, record_failure
from profcompare.runner.child import child_environment, failed_info, import_roots
from profcompare.runner.plan import Job, merge_engine_options
from profcompare.runner.results import STAGES, ProgressCallback
from profcompare.runner.rundir import RUN_JSON, now_iso, write_json_atomic
from profcompare.runner.staging import Staging

#: ASSUMPTION: a reachable Dask scheduler accepts a connection within this many seconds (it
#: answers in milliseconds on a local network; a bad address should not keep the user waiting)
CONNECT_TIMEOUT_SECONDS = 5

#: the scheduler's ``allowed-failures`` for the LocalCluster started here: a task whose worker
#: dies is run once more, and fails when its worker dies a second time (:data:`engine.ATTEMPTS`)
ALLOWED_FAILURES = ATTEMPTS - 1

#: the topic of the Dask events that carry the points' stages to the client (a run adds its token)
PROGRESS_TOPIC = "profcompare-progress"

#: the scheduler settings of the LocalCluster started here: a point's task is retried once when
#: its worker dies (:data:`ALLOWED_FAILURES`), and a worker holds only the task it runs
#: (worker-saturation 1.0: no task queued behind it), so a worker that dies takes no other point
#: down with it -- the scheduler counts a death against every task a worker held
LOCAL_SCHEDULER_CONFIG = {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                          "distributed.scheduler.worker-saturation": 1.0,
                          # the workers' statistical profiler samples every thread's stack every
                          # 10 ms: CPU taken from the points, whose compile is pure Python
                          "distributed.worker.profile.enabled": False}

#: environment variables of the client that a point's run on a worker receives (the rest of the
#: worker's environment is its own: another host's PATH and HOME are not ours to impose)
_FORWARDED_PREFIXES = ("PROFCOMPARE_", "POPLAR_")
_NOT_FORWARDED = frozenset({"PROFCOMPARE_PARENT_PID", "POPLAR_ENGINE_OPTIONS"})


class DaskUnreachableError(ProfcompareError):
    """The Dask scheduler named by ``--dask`` cannot be reached (or the cluster cannot start)."""


class DaskUnavailableError(ProfcompareError):
    """``--dask`` was given but dask.distributed is not installed."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def parse_dask_address(text: str, jobs: int = 1) -> tuple[str, int | str]:
    """``("local", N)`` for ``local:N`` (``local`` = ``jobs`` workers), ``("remote", address)`` for a
    scheduler address (``tcp://host:port``, ``tls://...``, or ``host:port`` meaning tcp); a
    one-line ProfcompareError for anything else."""
    value = text.strip()
    if value == "local" or value.startswith("local:"):
        count = value.partition(":")[2] or str(jobs)
        if not count.isdigit() or not 1 <= int(count) <= MAX_LOCAL_WORKERS:
            raise ProfcompareError(f"bad --dask {text!r}: local:N needs a worker count N from 1 to "
                                   f"{MAX_LOCAL_WORKERS} (e.g. local:2)")
        return "local", int(count)
    if "://" in value:
        scheme, _, rest = value.partition("://")
        if scheme and rest:
            return "remote", value
    elif value.rpartition(":")[2].isdigit() and value.rpartition(":")[0]:
        return "remote", f"tcp://{value}"
    raise ProfcompareError(f"bad --dask {text!r}: expected local:N or a scheduler address such as tcp://host:8786")


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise DaskUnavailableError(f"--dask needs dask.distributed, which cannot be imported ({exc}): "
                                   "pip install dask distributed") from None
    return distributed


class DaskEngine(Engine):
    """Runs jobs as tasks on a Dask cluster (see the module docstring)."""

    def __init__(self, client: Any, cluster: Any, address: str) -> None:
        self.client = client
        self.cluster = cluster
        self.address = address
        self.description = (f"Dask LocalCluster of {len(cluster.workers)} worker process(es)" if cluster is not None
                            else f"Dask cluster at {address}")

    @classmethod
    def connect(cls, text: str, jobs: int = 1) -> DaskEngine:
        """Start the LocalCluster or connect to the scheduler ``text`` names (:func:`parse_dask_address`)."""
        kind, where = parse_dask_address(text, jobs)
        distributed = _import_distributed()
        import dask

        if kind == "local":
            try:
                with dask.config.set(LOCAL_SCHEDULER_CONFIG):
                    cluster = distributed.LocalCluster(n_workers=int(where), threads_per_worker=1, processes=True,
                                                       dashboard_address=None, silence_logs=logging.ERROR)
            except Exception as exc:  # noqa: BLE001 - whatever stops the cluster, say it on one line
                raise DaskUnreachableError(f"cannot start a Dask LocalCluster of {where} workers: {_one_line(exc)}") from None
            try:
                client = distributed.Client(cluster, set_as_default=False)
            except BaseException:
                cluster.close()
                raise
            return cls(client, cluster, str(cluster.scheduler_address))
        address = str(where)
        try:
            client = distributed.Client(address, timeout=f"{CONNECT_TIMEOUT_SECONDS}s", set_as_default=False)
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, ValueError for a bad scheme...
            raise DaskUnreachableError(f"cannot reach the Dask scheduler at {address}: {_one_line(exc)}") from None
        return cls(client, None, address)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()

    def _payload(self, job: Job, backend: str, environ: Mapping[str, str] | None, execution: str | None) -> dict[str, Any]:
        from profcompare._version import __version__

        source = os.environ if environ is None else environ
        env = child_environment(job, Path("."), backend, environ, execution)
        overlay = {k: v for k, v in env.items() if k.startswith(_FORWARDED_PREFIXES) and k not in _NOT_FORWARDED}
        return {"job": {"label": job.label, "workload": job.workload, "workload_ref": job.workload_ref,
                        "variant": job.variant, "config": dict(job.config)},
                "spec": job_spec(job, backend), "overlay": overlay,
                "engine_options": source.get("POPLAR_ENGINE_OPTIONS"), "paths": import_roots(job),
                "version": __version__}

    def run_jobs(self, jobs: Sequence[Job], staging: Staging, *, backend: str, environ: Mapping[str, str] | None,
                 progress: ProgressCallback | None, execution: str | None) -> list[dict[str, Any]]:
        distributed = _import_distributed()
        token = secrets.token_hex(4)
        infos: list[dict[str, Any] | None] = [None] * len(jobs)
        started = now_iso(), time.perf_counter()
        futures: dict[Any, int] = {}
        stages = _StageRelay(progress, {job.label for job in jobs})
        topic = f"{PROGRESS_TOPIC}-{token}"
        if progress:
            self.client.subscribe_topic(topic, stages)
        try:
            for index, job in enumerate(jobs):
                payload = {**self._payload(job, backend, environ, execution), "topic": topic if progress else None}
                future = self.client.submit(run_point, payload, pure=False, key=f"profcompare-point-{token}-{index}",
                                            retries=1)
                futures[future] = index
            for future in distributed.as_completed(list(futures), loop=self.client.loop):
                index = futures[future]
                job = jobs[index]
                job_dir = prepare_job_dir(staging, job)
                if future.status == "finished":
                    info = write_point_files(job_dir, future.result())
                elif future.status == "cancelled":
                    raise DaskUnreachableError(f"the Dask scheduler at {self.address} cancelled the run's tasks "
                                               "(was it stopped, or the connection lost?); nothing was published")
                else:
                    exc = future.exception()
                    if isinstance(exc, distributed.KilledWorker):
                        error = _killed_message(exc)
                    else:
                        error = f"the point's task failed on the Dask worker: {type(exc).__name__}: {_one_line(exc)}"
                    info = record_failure(job, job_dir, backend, error, started[0], time.perf_counter() - started[1])
                future.release()
                infos[index] = info
                stages.done(job.label, info)
        except BaseException:
            with contextlib.suppress(Exception):
                self.client.cancel(list(futures), force=True)
            raise
        finally:
            if progress:
                with contextlib.suppress(Exception):
                    self.client.unsubscribe_topic(topic)
        return [info for info in infos if info is not None]


def _killed_message(exc: Any) -> str:
    """What a point whose workers all died says (the scheduler gave up on its task)."""
    runs = getattr(exc, "allowed_failures", ALLOWED_FAILURES) + 1
    last = getattr(getattr(exc, "last_worker", None), "address", None)
    times = "twice (it was retried once)" if runs == 2 else f"{runs} times (it was retried {runs - 1} times)"
    return f"a Dask worker died running this point, {times}" + (f"; the last was {last}" if last else "")


class _StageRelay:
    """Passes the stages the workers report (Dask events, on the client's event-loop thread) and
    each point's end (on the calling thread) to the progress callback: a stage that arrives
    after its point ended is dropped."""

    def __init__(self, progress: ProgressCallback | None, labels: set[str]) -> None:
        self._progress = progress
        self._labels = labels
        self._ended: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        message = event[1] if isinstance(event, tuple) and len(event) == 2 else event
        if not isinstance(message, Mapping) or self._progress is None:
            return
        label, stage = message.get("label"), message.get("stage")
        if label not in self._labels or stage not in STAGES or stage in ("queued", "done"):
            return
        with self._lock:
            if label not in self._ended:
                self._progress(str(label), str(stage), {})

    def done(self, label: str, info: Mapping[str, Any]) -> None:
        with self._lock:
            self._ended.add(label)
            if self._progress:
                self._progress(label, "done", {"status": info.get("status", "failed"), "error": info.get("error")})


def _safe_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or any(part in ("", ".", "..") for part in path.parts):
        raise ProfcompareError(f"a Dask worker returned a file outside its point's directory: {name!r}")
    return path


def write_point_files(job_dir: Path, result: Mapping[str, Any]) -> dict[str, Any]:
    """Write the files a :func:`run_point` returned into ``job_dir`` (each through a temporary
    file and a rename, run.json last); return the point's run.json content."""
    files: Mapping[str, bytes] = result["files"]
    for name in sorted(files, key=lambda n: n == RUN_JSON):
        relative = _safe_relative(name)
        target = job_dir.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        tmp.write_bytes(files[name])
        os.replace(tmp, target)
    info = dict(result["info"])
    if RUN_JSON not in files:
        write_json_atomic(job_dir / RUN_JSON, info)
    return info


def _collect_files(directory: Path) -> dict[str, bytes]:
    return {path.relative_to(directory).as_posix(): path.read_bytes()
            for path in sorted(directory.rglob("*")) if path.is_file() and not path.is_symlink()}


def _stage_reporter(topic: str | None, label: str) -> Callable[[str], None]:
    """A function sending a point's stages to the client as Dask events on ``topic`` (nothing
    without a topic, or outside a Dask worker); once per change of stage."""
    worker = None
    if topic:
        with contextlib.suppress(Exception):
            from distributed import get_worker

            worker = get_worker()
    last: list[str] = []

    def emit(stage: str) -> None:
        if worker is None or topic is None or (last and last[-1] == stage):
            return
        last.append(stage)
        with contextlib.suppress(Exception):  # progress is a courtesy: the point's files are what counts
            worker.log_event(topic, {"label": label, "stage": stage})

    return emit


def run_point(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The task of one point, run on a Dask worker: the job in a temporary directory of the worker
    (:func:`~profcompare.runner.in_process.run_job_here`), whose files come back as bytes.

    Returns ``{"info": run.json content, "files": {relative path: bytes}}``. A worker whose
    profcompare version is not the client's runs nothing: the point fails, saying so.
    """
    from profcompare._version import __version__
    from profcompare.runner.in_process import run_job_here

    job = Job(**payload["job"])
    backend = payload["spec"]["backend"]
    directory = Path(tempfile.mkdtemp(prefix="profcompare-point-"))
    try:
        if payload["version"] != __version__:
            info = failed_info(job, backend, f"this Dask worker has profcompare {__version__}, the client "
                                f"{payload['version']}: install the same version on every worker", now_iso(), 0.0,
                                directory)
            write_json_atomic(directory / RUN_JSON, info)
        else:
            env = {**os.environ, **payload["overlay"]}
            env["POPLAR_ENGINE_OPTIONS"] = merge_engine_options(payload["engine_options"], directory)
            emit = _stage_reporter(payload.get("topic"), job.label)
            emit("starting")
            info = run_job_here(payload["spec"], env, directory, emit, paths=payload["paths"])
        return {"info": info, "files": _collect_files(directory)}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


__all__ = ["ALLOWED_FAILURES", "CONNECT_TIMEOUT_SECONDS", "LOCAL_SCHEDULER_CONFIG", "DaskEngine", "DaskUnavailableError", "DaskUnreachableError",
           "parse_dask_address", "run_point", "write_point_files"]
