"""Workloads for the engine tests: jobs that kill their worker, and jobs that dirty or inspect the
process they run in (a warm worker must put back what a job changed).

Variants (each writes the small report of :mod:`fake_workloads` unless it dies first):

- ``crash-always``: the process ends on the spot (``os._exit``), every attempt;
- ``crash-once``: the process kills itself with SIGKILL when the marker file named by knob
  ``marker`` exists (removing it first), so its second attempt succeeds;
- ``polluter``: changes what a job may change in its process: an environment variable, the
  working directory, the sim's popxl aliases, a root logging handler, a warning filter, numpy's
  seed, sys.path;
- ``inspect``: records what it finds of those in ``state.json`` (and its process id).

Every attempt appends a line to ``<marker>.attempts`` when ``marker`` is set.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fake_workloads
from workloads import Knob, Workload, WorkloadResult

VARIANTS = {
    "crash-always": "the process ends on the spot, every time",
    "crash-once": "the process kills itself while its marker file exists (removing it first)",
    "polluter": "changes process-wide state",
    "inspect": "records process-wide state",
}

#: what ``polluter`` sets and ``inspect`` looks for
POLLUTION_VARIABLE = "PROFCOMPARE_TEST_POLLUTION"
POLLUTION_PATH = "/nonexistent/polluted-sys-path-entry"


def _state() -> dict[str, Any]:
    import numpy as np

    return {
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "variable": os.environ.get(POLLUTION_VARIABLE),
        "popxl_aliased": "popxl" in sys.modules,
        "root_handlers": len(logging.getLogger().handlers),
        "root_level": logging.getLogger().level,
        "error_filters": sum(1 for f in warnings.filters if f[0] == "error"),
        "path_polluted": POLLUTION_PATH in sys.path,
        "numpy_draw": int(np.random.randint(0, 2**31 - 1)),
        "backend": os.environ.get("PROFCOMPARE_BACKEND"),
        "engine_options": os.environ.get("POPLAR_ENGINE_OPTIONS"),
    }


def _pollute() -> None:
    import numpy as np

    from profcompare import sim

    os.environ[POLLUTION_VARIABLE] = "left behind"
    sim.install()
    logging.getLogger().addHandler(logging.StreamHandler())
    logging.getLogger().setLevel(logging.DEBUG)
    warnings.simplefilter("error")
    np.random.seed(1234)
    sys.path.insert(0, POLLUTION_PATH)
    os.chdir("/")


def run(variant: str, config: Mapping[str, Any]) -> WorkloadResult:
    """Run one variant (see the module docstring)."""
    marker = str(config["marker"])
    if marker:
        with open(marker + ".attempts", "a", encoding="utf-8") as attempts:
            attempts.write(f"{variant} {os.getpid()}\n")
    if variant == "crash-always":
        os._exit(3)
    if variant == "crash-once" and marker and os.path.exists(marker):
        os.remove(marker)
        os.kill(os.getpid(), signal.SIGKILL)
    if variant == "inspect":
        Path("state.json").write_text(json.dumps(_state()))
    fake_workloads._write_report("fake-small", {"size": 1000})
    if variant == "polluter":
        _pollute()
    return WorkloadResult(variant=variant, backend=os.environ.get("PROFCOMPARE_BACKEND", "sim"), losses=(1.0,),
                          samples_per_step=32, steps=1, build_seconds=0.0, compile_seconds=0.0, run_seconds=0.0)


WORKLOAD = Workload(
    name="engine-test",
    description="Jobs that kill their worker or dirty its process",
    variants=VARIANTS,
    knobs=(Knob("marker", str, "", "a marker file (see the module docstring)"),),
    run=run,
)
