"""The process a job runs in, as every engine starts it: its environment (``POPLAR_ENGINE_OPTIONS``,
the backend, the import roots, BLAS threads), how to tell it has exited without reaping it, and the
run.json of a job that failed before its program could write one.

Shared by the fresh-subprocess path (:mod:`profcompare.runner.execute`), the local pool
(:mod:`profcompare.runner.engine`) and Dask (:mod:`profcompare.runner.dask_engine`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profcompare.backend import execution_mode
from profcompare.perf import blas_threads
from profcompare.runner.plan import Job, merge_engine_options
from profcompare.runner.process.parent_watch import PARENT_PID_VARIABLE
from profcompare.runner.rundir import RUN_SCHEMA_VERSION, find_report_files, now_iso

if TYPE_CHECKING:
    from profcompare.runner.forked import ForkedChild

#: numpy's BLAS thread counts in a workload variant's process (see :mod:`profcompare.perf.blas_threads`)
VARIANT_THREAD_VARIABLES = blas_threads.VARIANT_THREAD_VARIABLES

#: the module the subprocess runs (``python -m ...``)
CHILD_MODULE = "profcompare.runner.process.variant_main"


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


def import_roots(job: Job) -> list[str]:
    """The sys.path entries another process needs to import profcompare and ``job``'s workload
    module as this one does (installed packages import anyway; a source checkout or a plug-in
    module needs its root)."""
    import site

    installed = {os.path.realpath(p) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    roots: list[str] = []
    for module_name in (CHILD_MODULE.rsplit(".", 1)[0], job.workload_ref.split(":", 1)[0]):
        if not module_name:
            continue
        root = _module_root(module_name) or _module_root(module_name.split(".")[0])
        if root and root not in roots and os.path.realpath(root) not in installed:
            roots.append(root)
    return roots


def child_environment(
    job: Job, job_dir: Path, backend: str, environ: Mapping[str, str] | None = None, execution: str | None = None
) -> dict[str, str]:
    """Return the environment of ``job``'s subprocess.

    ``POPLAR_ENGINE_OPTIONS`` merged (see :func:`merge_engine_options`), ``PROFCOMPARE_BACKEND``
    = ``backend``, ``PROFCOMPARE_SIM_EXECUTION`` = ``execution`` when given (else inherited),
    ``PYTHONPATH`` extended so the subprocess imports the same workload module, and for a workload
    variant (not a user's script) one BLAS thread (:data:`VARIANT_THREAD_VARIABLES`) unless
    ``environ`` says otherwise.
    """
    env = dict(os.environ if environ is None else environ)
    if job.child is not None:
        env = blas_threads.without_added(env)  # the command line's own BLAS setting is not the program's
    if execution is not None:
        env[execution_mode.ENV_VAR] = execution
    if job.child is None:
        for name, value in VARIANT_THREAD_VARIABLES.items():
            env.setdefault(name, value)
    env["POPLAR_ENGINE_OPTIONS"] = merge_engine_options(env.get("POPLAR_ENGINE_OPTIONS"), job_dir)
    env["PROFCOMPARE_BACKEND"] = backend
    env["PYTHONUNBUFFERED"] = "1"
    env[PARENT_PID_VARIABLE] = str(os.getpid())  # the child exits when this process is gone
    roots = import_roots(job)
    existing = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(roots + [p for p in existing if p not in roots])
    return env


def failed_info(job: Job, backend: str, error: str, started: str, total_s: float, job_dir: Path) -> dict[str, Any]:
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


def last_error_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def has_exited(proc: subprocess.Popen[bytes] | ForkedChild, *, block: bool) -> bool:
    """True when ``proc`` has exited (waiting for it when ``block``), without reaping it: its
    process id stays taken until :meth:`subprocess.Popen.wait`."""
    if proc.returncode is not None:
        return True
    if not hasattr(os, "waitid"):  # reaping is the only way to ask
        return proc.wait() is not None if block else proc.poll() is not None
    options = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
    while True:
        try:
            return os.waitid(os.P_PID, proc.pid, options) is not None
        except ChildProcessError:
            return True  # reaped already
        except InterruptedError:  # pragma: no cover - retried by Python itself since PEP 475
            continue


__all__ = ["CHILD_MODULE", "VARIANT_THREAD_VARIABLES", "child_environment", "failed_info", "has_exited", "import_roots",
           "last_error_line"]
