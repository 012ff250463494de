"""Execution engines: where the workload-variant jobs of a run execute.

:func:`profcompare.runner.engines.make_engine` gives one of two:

- the local pool (default): ``jobs`` warm worker processes (``python -m
  profcompare.runner.process.pool_worker``), each importing numpy, pandas and profcompare once and then running
  one job after another (:mod:`profcompare.runner.in_process` puts the process back as it was
  after each job), so a point costs its own work and not a Python start-up;
- Dask (``dask="local:N"`` or a scheduler address): every job is a task on a Dask cluster
  (:mod:`profcompare.runner.dask_engine`).

An engine writes each job's files (report, run.json, run.log) into ``<staging>/<label>/`` and
returns the jobs' run.json contents, as the fresh-subprocess path of
:func:`profcompare.runner.execute_jobs` does. A job that kills its worker (``os._exit``, a
signal, the kernel's OOM killer) loses only itself: it is run once more in a fresh worker, and if
that worker dies too its status is "failed" with a one-line reason. Engines are context
managers; :meth:`Engine.close` ends their workers. Nothing here prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from profcompare.errors import ProfcompareError
from profcompare.runner.child import child_environment, failed_info, has_exited, import_roots, last_error_line
from profcompare.runner.plan import Job
from profcompare.runner.process_group import GRACE_SECONDS, end_groups
from profcompare.runner.results import ProgressCallback
from profcompare.runner.rundir import RUN_JSON, RUN_LOG, now_iso, write_json_atomic
from profcompare.runner.staging import Staging

#: the module a warm worker runs (``python -m ...``)
POOL_WORKER_MODULE = "profcompare.runner.process.pool_worker"

#: how many times a job runs at most when its worker dies under it (the first run and one retry)
ATTEMPTS = 2

#: how long the workers' protocol pipes are waited on before the workers are looked at again (s)
_POLL_SECONDS = 0.2

#: environment variables set per job (they do not make a worker unfit for another job)
_PER_JOB_VARIABLES = frozenset({"POPLAR_ENGINE_OPTIONS", "PROFCOMPARE_SIM_EXECUTION"})


#: how the line a retry adds to a job's run.log starts
_RETRY_NOTE = "--- retry:"


class WorkerStartError(ProfcompareError):
    """A worker process of the pool could not start."""


class Engine(ABC):
    """Runs workload-variant jobs into a staging directory (see the module docstring)."""

    #: a short description for messages and benchmarks ("local pool of 2 workers", ...)
    description: str = ""

    @abstractmethod
    def run_jobs(self, jobs: Sequence[Job], staging: Staging, *, backend: str, environ: Mapping[str, str] | None,
                 progress: ProgressCallback | None, execution: str | None) -> list[dict[str, Any]]:
        """Run ``jobs`` into ``staging.path/<label>/``; return their run.json contents in job order.

        A failing job never raises (its run.json says what happened); an interrupted run
        (KeyboardInterrupt) stops every job of this engine and re-raises. Raises
        StagingLostError when the staging directory was taken away."""

    @abstractmethod
    def close(self) -> None:
        """End the engine's workers (idempotent)."""

    def __enter__(self) -> Engine:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def job_spec(job: Job, backend: str) -> dict[str, Any]:
    """The SPEC_JSON a variant subprocess gets (``profcompare.runner.process.variant_main``)."""
    return {"workload": job.workload, "workload_ref": job.workload_ref, "variant": job.variant,
            "config": dict(job.config), "backend": backend}


def prepare_job_dir(staging: Staging, job: Job) -> Path:
    """Create ``job``'s directory in ``staging`` (never its parents); StagingLostError when the
    staging directory went."""
    job_dir = staging.path / job.label
    staging.check()
    try:
        job_dir.mkdir(exist_ok=True)
    except FileNotFoundError:
        raise staging.lost() from None
    return job_dir


def record_failure(job: Job, job_dir: Path, backend: str, error: str, started: str, seconds: float) -> dict[str, Any]:
    """Write and return the run.json of a job that could not write its own."""
    info = failed_info(job, backend, error, started, seconds, job_dir)
    write_json_atomic(job_dir / RUN_JSON, info)
    return info


def clear_for_retry(job_dir: Path, note: str) -> None:
    """Empty ``job_dir`` for a job's second run, keeping its run.log with ``note`` appended."""
    for entry in job_dir.iterdir():
        if entry.name == RUN_LOG:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
    with open(job_dir / RUN_LOG, "a", encoding="utf-8") as log:
        log.write(f"\n{_RETRY_NOTE} {note} ---\n")


def _how_it_ended(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    return f"was killed by signal {-returncode}" if returncode < 0 else f"exited with code {returncode}"


class _Worker:
    """One warm worker process of the local pool and what it is doing."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", POOL_WORKER_MODULE],
            env=dict(env),
            cwd=tempfile.gettempdir(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            start_new_session=True,  # a process group of its own: what a job starts ends with the worker
        )
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buffer = bytearray()
        self.ready = False
        self.task: int | None = None  # index of the job it runs
        self.done = 0  # jobs it finished

    @property
    def fd(self) -> int:
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def send(self, message: Mapping[str, Any]) -> bool:
        """Write one task line; False when the worker is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return True

    def read(self) -> tuple[list[dict[str, Any]], bool]:
        """The complete messages waiting in the pipe, and False once the pipe is at its end."""
        open_ = True
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                open_ = False
                break
            if not chunk:
                open_ = False
                break
            self.buffer += chunk
        *lines, rest = bytes(self.buffer).split(b"\n")
        self.buffer[:] = rest
        messages = []
        for raw in lines:
            with contextlib.suppress(ValueError):
                message = json.loads(raw)
                if isinstance(message, dict):
                    messages.append(message)
        return messages, open_

    def stderr_tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            lines = [ln.strip() for ln in self.stderr.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            return lines[-1][:300] if lines else ""
        return ""

    def end(self) -> int | None:
        """End the worker and its process group; return its exit status."""
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        end_groups([self.proc.pid])  # with what its jobs left running, before its pid can be reused
        try:
            returncode = self.proc.wait(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
            self.proc.kill()
            returncode = self.proc.wait()
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdout is not None
            self.proc.stdout.close()
        with contextlib.suppress(OSError):
            self.stderr.close()
        return returncode


class LocalPoolEngine(Engine):
    """``jobs`` warm worker processes on this machine (see the module docstring).

    Workers start on the first :meth:`run_jobs` and serve every later one until :meth:`close`;
    they are started afresh when a run needs another environment (another backend, say)."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = max(1, int(jobs))
        self.description = f"local pool of {self.jobs} warm worker process{'es' if self.jobs > 1 else ''}"
        self._workers: list[_Worker] = []
        self._worker_env: dict[str, str] | None = None

    # -- workers

    def _key(self, env: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in env.items() if k not in _PER_JOB_VARIABLES}

    def _spawn(self) -> _Worker:
        assert self._worker_env is not None
        worker = _Worker(self._worker_env)
        self._workers.append(worker)
        return worker

    def _retire(self, worker: _Worker) -> int | None:
        with contextlib.suppress(ValueError):
            self._workers.remove(worker)
        return worker.end()

    def close(self) -> None:
        for worker in list(self._workers):
            self._retire(worker)

    # -- running

    def run_jobs(self, jobs: Sequence[Job], staging: Staging, *, backend: str, environ: Mapping[str, str] | None,
                 progress: ProgressCallback | None, execution: str | None) -> list[dict[str, Any]]:
        if not jobs:
            return []
        env = child_environment(jobs[0], staging.path.resolve(), backend, environ, execution)
        if self._worker_env is not None and self._key(env) != self._key(self._worker_env):
            self.close()  # workers imported another backend, other variables: start them afresh
        self._worker_env = env
        try:
            return _Dispatch(self, jobs, staging, backend, environ, progress, execution).run()
        except BaseException:
            self.close()  # the jobs in flight stop with their workers
            raise


class _Dispatch:
    """One :meth:`LocalPoolEngine.run_jobs`: hands jobs to idle workers, reads their messages,
    replaces workers that die."""

    def __init__(self, engine: LocalPoolEngine, jobs: Sequence[Job], staging: Staging, backend: str,
                 environ: Mapping[str, str] | None, progress: ProgressCallback | None, execution: str | None) -> None:
        self.engine = engine
        self.jobs = list(jobs)
        self.staging = staging
        self.backend = backend
        self.environ = environ
        self.progress = progress
        self.execution = execution
        self.infos: list[dict[str, Any] | None] = [None] * len(jobs)
        self.attempts = [0] * len(jobs)
        self.started: list[tuple[str, float]] = [("", 0.0)] * len(jobs)
        self.queue: deque[int] = deque(range(len(jobs)))
        self.start_failures = 0

    def _emit(self, index: int, stage: str, info: Mapping[str, Any] | None = None) -> None:
        if self.progress:
            self.progress(self.jobs[index].label, stage, info or {})

    def _start(self, worker: _Worker, index: int) -> None:
        job = self.jobs[index]
        job_dir = prepare_job_dir(self.staging, job)
        if self.attempts[index] == 0:
            self.started[index] = (now_iso(), time.perf_counter())
            self._emit(index, "starting")
        self.attempts[index] += 1
        worker.task = index
        task = {"id": index, "spec": job_spec(job, self.backend),
                "env": child_environment(job, job_dir.resolve(), self.backend, self.environ, self.execution),
                "job_dir": str(job_dir.resolve()), "paths": import_roots(job)}
        worker.send(task)  # a worker gone by now is noticed by its closed pipe

    def _finish(self, index: int, info: dict[str, Any]) -> None:
        self.infos[index] = info
        self._emit(index, "done", {"status": info.get("status", "failed"), "error": info.get("error")})

    def _fail(self, index: int, error: str) -> None:
        job = self.jobs[index]
        started, t0 = self.started[index]
        info = record_failure(job, self.staging.path / job.label, self.backend, error, started, time.perf_counter() - t0)
        self._finish(index, info)

    def _on_death(self, worker: _Worker, selector: selectors.BaseSelector) -> None:
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(worker.fd)
        index = worker.task
        was_ready = worker.ready
        returncode = self.engine._retire(worker)
        how = _how_it_ended(returncode)
        if index is None:
            if not was_ready:
                self.start_failures += 1
                if self.start_failures >= ATTEMPTS:
                    detail = worker.stderr_tail()
                    raise WorkerStartError(f"a worker process of the local pool {how} while starting"
                                           + (f": {detail}" if detail else ""))
            return
        self.staging.check()  # a job that died because its directory went is the run's loss
        job_dir = self.staging.path / self.jobs[index].label
        if self.attempts[index] < ATTEMPTS:
            clear_for_retry(job_dir, f"the worker process {how} running this point; running it again in a fresh worker")
            fresh = self.engine._spawn()
            selector.register(fresh.fd, selectors.EVENT_READ, fresh)
            self._start(fresh, index)
            return
        detail = last_error_line(job_dir / RUN_LOG)
        detail = "" if detail.startswith(_RETRY_NOTE) else detail  # the point said nothing before it died
        self._fail(index, f"the worker process {how} running this point, twice (it was retried once in a fresh "
                          f"worker)" + (f": {detail}" if detail else ""))

    def _on_message(self, worker: _Worker, message: Mapping[str, Any]) -> None:
        if "ready" in message:
            worker.ready = True
            self.start_failures = 0
            return
        index = message.get("id")
        if index != worker.task or index is None:
            return
        if "stage" in message:
            stage = message["stage"]
            if stage not in ("done", "starting", "queued"):
                self._emit(index, str(stage))
            return
        worker.task = None
        worker.done += 1
        if isinstance(message.get("done"), dict):
            self._finish(index, dict(message["done"]))
        else:
            self.staging.check()
            self._fail(index, f"the job could not run in its worker: {message.get('error', 'no reason given')}")

    def run(self) -> list[dict[str, Any]]:
        engine = self.engine
        size = min(engine.jobs, len(self.jobs))
        with selectors.DefaultSelector() as selector:
            for worker in engine._workers:
                selector.register(worker.fd, selectors.EVENT_READ, worker)
            while any(info is None for info in self.infos):
                busy = sum(w.task is not None for w in engine._workers)
                while len(engine._workers) < size and busy + len(self.queue) > len(engine._workers):
                    worker = engine._spawn()
                    selector.register(worker.fd, selectors.EVENT_READ, worker)
                for worker in list(engine._workers):
                    if self.queue and worker.task is None and worker.proc.returncode is None:
                        self._start(worker, self.queue.popleft())
                for key, _ in selector.select(timeout=_POLL_SECONDS):
                    worker = key.data
                    messages, open_ = worker.read()
                    for message in messages:
                        self._on_message(worker, message)
                    if not open_:
                        self._on_death(worker, selector)
                for worker in list(engine._workers):  # a worker whose pipe a leftover process holds open
                    if has_exited(worker.proc, block=False):
                        messages, _ = worker.read()
                        for message in messages:
                            self._on_message(worker, message)
                        self._on_death(worker, selector)
        return [info for info in self.infos if info is not None]


__all__ = ["ATTEMPTS", "Engine", "LocalPoolEngine", "POOL_WORKER_MODULE", "WorkerStartError", "clear_for_retry",
           "job_spec", "prepare_job_dir", "record_failure"]
