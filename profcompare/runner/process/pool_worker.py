"""A warm worker of the runner's local pool: ``python -m profcompare.runner.process.pool_worker``.

It imports numpy, pandas and profcompare once, then runs one workload-variant job after another
in this process (:func:`profcompare.runner.in_process.run_job_here`, which puts the process back
as it was after each). Tasks come one JSON line each on stdin::

    {"id": 3, "spec": {...}, "env": {...}, "job_dir": "/abs/dir", "paths": ["/abs/root"]}

and the parent hears back on the original stdout, one JSON line each: ``{"ready": PID}`` once
warm, ``{"id": 3, "stage": "compiling"}`` while a job runs, and ``{"id": 3, "done": RUN_JSON}``
(or ``{"id": 3, "error": "..."}`` when the job could not be run at all) when it ends. File
descriptors 0 and 1 are pointed elsewhere first (the job's output goes to its run.log), so
nothing a workload reads or prints can disturb the protocol. The worker ends at the end of
stdin, and with its parent (:func:`profcompare.runner.process.parent_watch.exit_with_parent`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import IO, Any


def _open_tasks() -> IO[str]:
    """Keep stdin for the tasks (this process's alone, closed in every process it forks) and give
    fd 0 /dev/null."""
    from profcompare.runner.process.variant_main import private_stream

    tasks = private_stream(0, "r")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return tasks


def _send(proto: IO[str], message: dict[str, Any]) -> None:
    proto.write(json.dumps(message, default=str) + "\n")
    proto.flush()


def main() -> int:
    from profcompare.runner.process.parent_watch import exit_with_parent
    from profcompare.runner.process.variant_main import _open_protocol

    exit_with_parent()
    tasks = _open_tasks()
    proto = _open_protocol()
    # what every job needs, imported once (the backend's modules come with the first job)
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    import profcompare.readers  # noqa: F401
    from profcompare.runner.in_process import run_job_here

    _send(proto, {"ready": os.getpid()})
    for line in tasks:
        if not line.strip():
            continue
        task = json.loads(line)
        ident = task["id"]
        last: list[str] = []

        def emit(stage: str, ident: Any = ident, last: list[str] = last) -> None:
            if not last or last[-1] != stage:
                last.append(stage)
                _send(proto, {"id": ident, "stage": stage, "t": round(time.time(), 3)})

        try:
            info = run_job_here(task["spec"], task["env"], Path(task["job_dir"]), emit, task.get("paths", ()))
        except Exception as exc:  # noqa: BLE001 - the job's directory went, say; the parent records it
            _send(proto, {"id": ident, "error": f"{type(exc).__name__}: {exc}"})
            continue
        _send(proto, {"id": ident, "done": info})
    return 0


if __name__ == "__main__":
    sys.exit(main())
