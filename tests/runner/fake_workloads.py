"""A tiny workload for the runner's tests: writes a small report through the store, or fails.

It follows the autoReport contract the real backends follow (the report goes to
``autoReport.directory`` from ``POPLAR_ENGINE_OPTIONS``), so the runner cannot tell it apart
from a real workload. Variants:

- ``fake-small`` / ``fake-big``: ok; ``fake-big`` has larger variables and a remote buffer.
- ``fake-broken``: raises a WorkloadError after starting.
- ``fake-oom``: writes a report flagged oom, then raises IpuOutOfMemoryError (like the Engine).
- ``fake-crash``: the process kills itself (SIGKILL) without writing run.json.
- ``fake-slow``: sleeps ``sleep`` seconds before writing its report.
- ``fake-forks``: forks a process that sleeps 60 s (its pid in ``sleeper.json``; it writes
  ``sleeper-finished`` if nobody ends it), then writes its report and returns.
- ``fake-hostile-error``: fails with an error text of several lines holding ESC and bidi controls.

Every run also writes ``env.json`` (backend, engine options, cwd) for the tests to inspect.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from profcompare.errors import IpuOutOfMemoryError, WorkloadError
from workloads import Knob, Workload, WorkloadResult

VARIANTS = {
    "fake-small": "small report",
    "fake-big": "bigger report with a remote buffer",
    "fake-broken": "fails with a WorkloadError",
    "fake-oom": "does not fit; report flagged oom",
    "fake-oom-allowed": "does not fit, but the engine was told to allow it (debug.allowOutOfMemory)",
    "fake-crash": "the process dies without a word",
    "fake-slow": "sleeps before writing its report",
    "fake-forks": "leaves a forked process sleeping in the background",
    "fake-hostile-error": "fails with a multi-line error holding control characters",
}

#: the error text of fake-hostile-error
HOSTILE_ERROR = "first line\nsecond \x1b[2J\x1b]0;owned\x07 line \u202eright-to-left"


def fork_sleeper(seconds: float = 60.0) -> int:
    """Fork a process that sleeps ``seconds`` then writes ``sleeper-finished``; return its pid."""
    pid = os.fork()
    if pid == 0:
        time.sleep(seconds)
        Path("sleeper-finished").write_text("nobody ended the sleeper")
        os._exit(0)
    Path("sleeper.json.tmp").write_text(json.dumps({"pid": pid}))
    os.replace("sleeper.json.tmp", "sleeper.json")
    return pid


def _report_dir() -> Path:
    options = json.loads(os.environ.get("POPLAR_ENGINE_OPTIONS", "{}"))
    return Path(options.get("autoReport.directory", "."))


def _write_report(variant: str, config: Mapping[str, Any], oom: bool = False) -> Path:
    from profcompare.model import Report, ReportMeta, Target, make_frame
    from profcompare.readers.store import write_report

    size = int(config["size"])
    big = variant == "fake-big"
    scale = 3 if big else 1
    tiles = 4
    target = Target("Mk2", num_ipus=1, tiles_per_ipu=tiles, bytes_per_tile=1000 if oom else 10_000_000, clock_hz=1.33e9)
    names = ["w0", "w1", "opt/w0"] + (["opt/w1"] if big else [])
    var_bytes = [size * scale, size, size * 2 * scale] + ([size * 2] if big else [])
    per_tile = sum(var_bytes) // tiles
    meta = ReportMeta(
        source="",
        format="store",
        producer="profcompare-sim 0.1.0",
        simulated=True,
        target=target,
        oom=oom,
        variant=variant,
        workload="fake",
        samples_per_step=32,
    )
    tables: dict[str, Any] = {
        "tiles": make_frame(
            "tiles",
            {
                "tile": list(range(tiles)),
                "ipu": [0] * tiles,
                "bytes_including_gaps": [per_tile + 100] * tiles,
                "bytes_excluding_gaps": [per_tile] * tiles,
                "always_live_bytes": [per_tile] * tiles,
                "not_always_live_peak_bytes": [100] * tiles,
            },
        ),
        "categories": make_frame(
            "categories",
            {"category": ["variable", "vertexCode"], "group": ["variables", "code"], "bytes": [sum(var_bytes), 400 * scale]},
        ),
        "variables": make_frame(
            "variables",
            {
                "name": names,
                "bytes": var_bytes,
                "always_live": [True] * len(names),
                "kind": ["weight", "weight", "optimizer_state"] + (["optimizer_state"] if big else []),
                "dtype": ["float32"] * len(names),
                "shape": ["[10]"] * len(names),
                "tiles": [tiles] * len(names),
                "first_step": [None] * len(names),
                "last_step": [None] * len(names),
            },
        ),
        "liveness": make_frame(
            "liveness",
            {"step": [0, 1], "program": ["fwd", "bwd"], "program_type": ["OnTileExecute"] * 2, "not_always_live_bytes": [200, 400]},
        ),
        "execution": make_frame(
            "execution",
            {"run": [0, 0], "step": [0, 1], "program": ["fwd", "bwd"], "type": ["OnTileExecute"] * 2,
             "phase": ["compute", "exchange"], "cycles": [1000 * scale, 500]},
        ),
    }
    if big:
        tables["remote_buffers"] = make_frame(
            "remote_buffers",
            {"name": ["opt/w1"], "entries": [1], "shape": ["[10]"], "dtype": ["float32"], "sharded": [False], "bytes": [size * 2]},
        )
    return write_report(Report.build(meta, **tables), _report_dir() / "profile.sqlite")


#: set by a test in the runner's process: a variant forked from it sees the value, a fresh
#: subprocess the module's own None
RUNNER_MARK: str | None = None


def _blas_threads() -> int | None:
    """The thread count of the BLAS library numpy loaded in this process (None without one)."""
    from threadpoolctl import threadpool_info

    counts = [int(info["num_threads"]) for info in threadpool_info() if info.get("user_api") == "blas"]
    return max(counts) if counts else None


def run(variant: str, config: Mapping[str, Any]) -> WorkloadResult:
    """Run one fake variant (see the module docstring)."""
    # written whole then renamed: the tests poll for env.json and read it as soon as it exists
    Path("env.json.part").write_text(
        json.dumps(
            {
                "PROFCOMPARE_BACKEND": os.environ.get("PROFCOMPARE_BACKEND"),
                "POPLAR_ENGINE_OPTIONS": os.environ.get("POPLAR_ENGINE_OPTIONS"),
                "cwd": os.getcwd(),
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "sid": os.getsid(0),
                "runner_mark": RUNNER_MARK,
                "blas_threads": _blas_threads(),
                "config": dict(config),
            }
        )
    )
    os.replace("env.json.part", "env.json")
    print("stray output on stdout must not disturb the runner")
    start = time.perf_counter()
    if variant == "fake-broken":
        raise WorkloadError("broken on purpose")
    if variant == "fake-hostile-error":
        raise WorkloadError(HOSTILE_ERROR)
    if variant == "fake-forks":
        fork_sleeper()
    if variant == "fake-crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if variant == "fake-slow":
        time.sleep(float(config["sleep"]))
    if variant == "fake-oom":
        path = _write_report(variant, config, oom=True)
        raise IpuOutOfMemoryError("out of memory: 4 tiles over budget", str(path))
    _write_report(variant, config, oom=variant == "fake-oom-allowed")
    elapsed = time.perf_counter() - start
    return WorkloadResult(
        variant=variant,
        backend=os.environ.get("PROFCOMPARE_BACKEND", "sim"),
        losses=(2.0, 1.5),
        samples_per_step=32,
        steps=2,
        build_seconds=0.0,
        compile_seconds=elapsed,
        run_seconds=0.0,
    )


WORKLOAD = Workload(
    name="fake",
    description="A tiny test workload that writes a small report",
    variants=VARIANTS,
    knobs=(
        Knob("size", int, 1000, "variable size in bytes"),
        Knob("sleep", float, 0.0, "seconds fake-slow sleeps"),
        Knob("device", str, "ipu_hw", "device", choices=("ipu_hw", "ipu_model")),
        Knob("tag", str, "", "free text carried into the config"),
    ),
    run=run,
)
