"""Starting a workload variant's process by forking the runner instead of starting a new Python.

A fresh ``python -m profcompare.runner.process.variant_main`` spends about 0.45 CPU seconds of an MNIST
variant's 1.1 starting Python and importing numpy, pandas and the simulator, every variant again
(measured with benchmarks/bench_run.py). On Linux, with the simulator, the runner imports those
modules once (:func:`preload`) and forks a child per variant: the child is the same kind of
process as before -- a process group and session of its own, fd 0 /dev/null, fd 1 the stage
protocol pipe, fd 2 the job's run.log, the job's environment and working directory, dying with
its parent -- and runs exactly the code the fresh subprocess runs
(:func:`profcompare.runner.process.variant_main.main`), then leaves with ``os._exit``. A child that crashes,
is killed or calls ``os._exit`` loses only itself, as a subprocess would.

Only what the parent holds at the moment of the fork is shared, and nothing the parent's other
threads hold is used by the child: it makes its own ``sys.stdin``/``stdout``/``stderr`` objects
on the new descriptors, puts the signal handlers back to Python's defaults, and never touches
the progress display. The modules it needs are imported before the fork, in the thread that
forks, so no import is half done in it. The real SDK (``backend sdk``), a user's program
(``profile``), other systems, or ``PROFCOMPARE_VARIANT_START=spawn`` keep the fresh subprocess.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from profcompare.perf import blas_threads, collector
from profcompare.runner.plan import Job

#: ``spawn`` makes every variant a fresh ``python -m`` subprocess, also where forking is possible
START_VARIABLE = "PROFCOMPARE_VARIANT_START"

#: what a simulated variant imports, loaded once in the parent before its first fork
_PRELOAD = (
    "ctypes",
    "numpy",
    "pandas",
    "profcompare.runner.process.variant_main",
    "profcompare.readers",
    "profcompare.sim",
    "profcompare.emulator.engine",
    "profcompare.emulator.popxl",
    "profcompare.emulator.popxl_addons",
    # imported by a Session's compile (lowering, attribution of memory to parameters): else
    # once in every child
    "profcompare.emulator.lowering",
    "profcompare.emulator.compile.attribution",
)


def can_fork(job: Job, backend: str, environ: Mapping[str, str] | None = None) -> bool:
    """True when ``job`` runs in a forked child: a workload variant on the simulator, on Linux,
    unless ``$PROFCOMPARE_VARIANT_START`` is ``spawn``."""
    env = os.environ if environ is None else environ
    return (job.child is None and backend == "sim" and sys.platform.startswith("linux")
            and hasattr(os, "fork") and env.get(START_VARIABLE, "fork") != "spawn")


def preload(job: Job) -> None:
    """Import what ``job``'s child will need, so that every child finds it imported (without
    collections: :func:`profcompare.perf.collector.importing`)."""
    with collector.importing():
        for name in _PRELOAD:
            importlib.import_module(name)
        module = job.workload_ref.partition(":")[0]
        if module:
            importlib.import_module(module)


class ForkedChild:
    """The parent's handle on a forked variant: the parts of :class:`subprocess.Popen` the runner
    uses (``pid``, ``stdout``, ``returncode``, ``poll``, ``wait``)."""

    def __init__(self, pid: int, stdout: BinaryIO) -> None:
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            if self.returncode is None:
                try:
                    _, status = os.waitpid(self.pid, 0)  # returns when the child has ended
                    self.returncode = os.waitstatus_to_exitcode(status)
                except ChildProcessError:  # reaped elsewhere: nothing more can be known
                    self.returncode = -signal.SIGKILL
            return self.returncode
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"variant process {self.pid}", timeout)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


def start(spec: Mapping[str, Any], env: Mapping[str, str], job_dir: Path, log: BinaryIO) -> ForkedChild:
    """Fork a child that runs the variant ``spec`` in ``job_dir`` with environment ``env``, its
    stage protocol on the returned handle's ``stdout`` and its output in ``log``."""
    argument = json.dumps(dict(spec))
    environment = dict(env)
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the parent's objects: never scanned by the child's collector, nor copied by it
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        _child(argument, environment, job_dir, read_end, write_end, log.fileno())
    gc.unfreeze()
    os.close(write_end)
    return ForkedChild(pid, os.fdopen(read_end, "rb", buffering=0))


def _limit_blas_threads(env: Mapping[str, str]) -> None:  # pragma: no cover - runs in the forked child
    """Give numpy's BLAS the thread count the job's environment asks for
    (:data:`profcompare.perf.blas_threads.VARIANT_THREAD_VARIABLES`): the BLAS library was loaded by
    the parent, which read its thread count from the parent's environment, and a BLAS worker
    thread spins while idle (0.4 CPU seconds of an MNIST variant). Nothing to do when the parent
    loaded it with these counts already (:func:`profcompare.perf.blas_threads.loaded_as_variants_run`)."""
    if blas_threads.loaded_as(env):
        return
    from threadpoolctl import threadpool_limits

    for name in blas_threads.VARIANT_THREAD_VARIABLES:
        value = env.get(name, "")
        if value.isdigit() and int(value) > 0:
            threadpool_limits(limits=int(value), user_api="blas")
            return


#: glibc's mallopt parameters (malloc.h) and the values a variant's process runs with
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_KEEP_FREED_BYTES = 1 << 30
_HEAP_ARRAYS_BELOW = 32 << 20  # glibc's largest default mmap threshold on 64-bit systems


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory for reuse instead of returning it to the system.

    A numeric step allocates and frees the same large numpy temporaries (weights cast to float32,
    gradients) again and again; by default glibc gives each large block back (``munmap``, or
    trimming the heap) and the next one is new memory whose every page faults in, zeroed by the
    kernel: about half of a simulated MNIST variant's page faults, 0.1-0.2 CPU seconds of system
    time (measured with ``resource.getrusage``). Kept in the heap, the next temporary reuses
    pages already mapped. Only this short-lived process is affected. Returns False where there
    is no glibc (the call is skipped: other allocators keep their own policy).
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _HEAP_ARRAYS_BELOW)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED_BYTES))


def _child(argument: str, env: dict[str, str], job_dir: Path, read_end: int, write_end: int,
           log_fd: int) -> None:  # pragma: no cover - runs in the forked child
    code = 1
    try:
        os.setsid()  # a session and process group of its own, as start_new_session=True gives
        os.close(read_end)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(write_end, 1)
        os.dup2(log_fd, 2)
        for fd in {null, write_end}:
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for name in ("SIGTERM", "SIGHUP", "SIGCHLD"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        gc.enable()  # as in a fresh process, whatever another thread of the parent had paused
        os.chdir(job_dir)
        os.environ.clear()
        os.environ.update(env)
        _limit_blas_threads(env)
        keep_freed_memory()
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        sys.argv = ["-m", argument]
        from profcompare.runner.process import variant_main as _variant_main

        code = _variant_main.main([argument])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - said in run.log; the parent reads the exit code
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


__all__ = ["START_VARIABLE", "ForkedChild", "can_fork", "keep_freed_memory", "preload", "start"]
