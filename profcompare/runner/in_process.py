"""Running one workload-variant job inside a long-lived process (a warm pool worker, a Dask
worker), so that the process imports numpy, pandas and profcompare once and runs many jobs.

A job runs exactly as ``python -m profcompare.runner.process.variant_main`` runs it in a fresh subprocess:
:func:`profcompare.runner.process.variant_main.run` in the job's directory, with the job's environment
(``POPLAR_ENGINE_OPTIONS`` asking for an autoReport there, ``PROFCOMPARE_BACKEND``,
``PROFCOMPARE_SIM_EXECUTION``...), everything written to file descriptors 1 and 2 going to the
job's ``run.log``. What one job may change in the process and a fresh process would not have
is put back before the next job (:class:`ProcessState`):

- ``os.environ`` (replaced by the job's for the job), the working directory, ``sys.argv``;
- ``sys.path``, ``sys.meta_path`` and ``sys.path_hooks``, and the modules
  :mod:`profcompare.sim` registers under the real popxl names (``popxl``, ``popxl_addons``,
  ``popart``, ``popdist`` and their submodules, when they alias the emulator);
- the ``popxl.Session`` class, which the job's stage reporting wraps;
- the root logger's handlers and level, ``logging.disable``, the warning filters (and so the
  once-per-location warning registries), and the handlers of SIGINT/SIGTERM/SIGHUP;
- ``sys.stdin``/``sys.stdout``/``sys.stderr``, the recursion limit, numpy's floating-point
  error handling (``numpy.seterr``);
- the random generators of ``random`` and numpy's global one are seeded afresh from the
  operating system before every job, as a fresh process's are.

Caches of pure functions (the cycle model's memo tables, the float16 tables) stay warm: that is
the point. Modules the job imported stay imported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profcompare.runner.rundir import RUN_LOG

#: the modules whose ``Session`` the stage reporting of :mod:`profcompare.runner.process.variant_main` wraps
_SESSION_MODULES = ("profcompare.emulator.popxl", "popxl")

#: signals whose handlers a job may change (only the main thread can set them back)
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

#: the attribute naming the class a stage-reporting ``Session`` wrapper stands in for
WRAPPED_ATTRIBUTE = "_profcompare_wraps"


def _aliased_modules() -> set[str]:
    """Names in sys.modules that :mod:`profcompare.sim` registered for an emulator module."""
    from profcompare.sim import ALIASES

    return {name for name, module in list(sys.modules.items())
            if name.partition(".")[0] in ALIASES and module is not None
            and getattr(module, "__name__", name) != name}


def unwrap_session_classes() -> None:
    """Give every popxl module its own ``Session`` class back (the stage reporting wraps it)."""
    for name in _SESSION_MODULES:
        module = sys.modules.get(name)
        session = getattr(module, "Session", None) if module is not None else None
        original = session
        while isinstance(original, type) and WRAPPED_ATTRIBUTE in vars(original):
            original = vars(original)[WRAPPED_ATTRIBUTE]
        if original is not session:
            module.Session = original  # type: ignore[union-attr]


@dataclass
class ProcessState:
    """What a job may change in its process, taken before the job (:meth:`take`) and put back
    after it (:meth:`restore`)."""

    environ: dict[str, str]
    cwd: str
    argv: list[str]
    path: list[str]
    meta_path: list[Any]
    path_hooks: list[Any]
    aliased: set[str]
    root_handlers: list[logging.Handler]
    root_level: int
    logging_disabled: int
    warning_filters: list[Any]
    signal_handlers: dict[int, Any]
    streams: tuple[Any, Any, Any]
    recursion_limit: int
    numpy_errors: dict[str, str] | None

    @classmethod
    def take(cls) -> ProcessState:
        handlers: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            handlers = {signum: signal.getsignal(signum) for signum in _SIGNALS}
        root = logging.getLogger()
        return cls(
            environ=dict(os.environ),
            cwd=os.getcwd(),
            argv=list(sys.argv),
            path=list(sys.path),
            meta_path=list(sys.meta_path),
            path_hooks=list(sys.path_hooks),
            aliased=_aliased_modules(),
            root_handlers=list(root.handlers),
            root_level=root.level,
            logging_disabled=logging.root.manager.disable,
            warning_filters=list(warnings.filters),
            signal_handlers=handlers,
            streams=(sys.stdin, sys.stdout, sys.stderr),
            recursion_limit=sys.getrecursionlimit(),
            numpy_errors=_numpy_errors(),
        )

    def restore(self) -> None:
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        with contextlib.suppress(OSError):
            os.chdir(self.cwd)
        sys.argv[:] = self.argv
        sys.path[:] = self.path
        sys.meta_path[:] = self.meta_path
        sys.path_hooks[:] = self.path_hooks
        for name in _aliased_modules() - self.aliased:
            sys.modules.pop(name, None)
        unwrap_session_classes()
        root = logging.getLogger()
        for handler in [h for h in root.handlers if h not in self.root_handlers]:
            root.removeHandler(handler)
            with contextlib.suppress(Exception):
                handler.close()
        for handler in self.root_handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(self.root_level)
        logging.disable(self.logging_disabled)
        # typeshed declares warnings.filters a Sequence; it is the module's own list, restored in place
        warnings.filters[:] = self.warning_filters  # type: ignore[index]
        mutated = getattr(warnings, "_filters_mutated", None) or getattr(warnings, "_filters_mutated_lock_held", None)
        if mutated is not None:
            with contextlib.suppress(Exception):
                mutated()  # forget which warnings were shown once: a fresh process shows them again
        sys.stdin, sys.stdout, sys.stderr = self.streams
        sys.setrecursionlimit(self.recursion_limit)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.seterr(**(self.numpy_errors or _FRESH_NUMPY_ERRORS))
        for signum, handler in self.signal_handlers.items():
            if signal.getsignal(signum) is not handler and handler is not None:
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(signum, handler)


#: numpy's floating-point error handling in a new process (``numpy.geterr()``)
_FRESH_NUMPY_ERRORS = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}


def _numpy_errors() -> dict[str, str] | None:
    numpy = sys.modules.get("numpy")
    return dict(numpy.geterr()) if numpy is not None else None


def _seed_afresh() -> None:
    """Seed ``random`` and numpy's global generator from the operating system, as in a new process."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


@contextlib.contextmanager
def _output_to(log: Path) -> Any:
    """Send everything written to file descriptors 1 and 2 (and sys.stdout/sys.stderr) to ``log``
    (appended) while the block runs."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = (os.dup(1), os.dup(2))
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in (*saved, fd):
            os.close(descriptor)


def run_job_here(spec: Mapping[str, Any], env: Mapping[str, str], job_dir: Path,
                 emit: Callable[[str], None] = lambda stage: None, paths: Sequence[str] = ()) -> dict[str, Any]:
    """Run one workload variant in this process, as its subprocess would; return its run.json.

    ``spec`` is the subprocess's SPEC_JSON (workload, workload_ref, variant, config, backend),
    ``env`` the whole environment of the job, ``job_dir`` its directory (run.json, run.log and
    the report land there), ``paths`` sys.path entries the workload's module needs. ``emit``
    receives the stages. Every change the job makes to the process is undone on return.
    """
    from profcompare.runner.process import variant_main as _variant_main

    state = ProcessState.take()
    try:
        with _output_to(job_dir / RUN_LOG):
            os.environ.clear()
            os.environ.update(env)
            os.chdir(job_dir)
            for entry in reversed(list(paths)):
                if entry not in sys.path and os.path.isdir(entry):
                    sys.path.insert(0, entry)
            _seed_afresh()
            return _variant_main.run(dict(spec), emit)
    finally:
        state.restore()


__all__ = ["ProcessState", "WRAPPED_ATTRIBUTE", "run_job_here", "unwrap_session_classes"]
