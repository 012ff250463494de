"""Host memory the numeric simulation needs, estimated and checked before it is allocated.

Numeric execution keeps, per variable, the host data popxl.variable copied, the Session's host
copy and one device copy per replica (``DeviceState``: ``(replicas, *shape)``); per remote
buffer one copy of every entry per replica; per on-chip replica shard one copy per replica; per
``retrieval_mode="all_replicas"`` variable a per-replica host buffer. A memmap-backed
variable's host copy is its file, not memory. The estimate counts exactly those arrays (not
activations, which live only while a run executes, nor numpy's temporaries), so it is a lower
bound of what a run needs.

The limit is the memory the kernel says is available (``MemAvailable`` in /proc/meminfo, else
``SC_AVPHYS_PAGES x SC_PAGE_SIZE``), or ``$PROFCOMPARE_SIM_HOST_MEMORY`` (bytes, or with a KiB /
MiB / GiB / TiB suffix) when set. Compile-only execution allocates none of this and is not
checked.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from profcompare.errors import ProfcompareError

from .errors import SimulatorHostMemoryError

if TYPE_CHECKING:
    from .ir import Ir

#: environment variable overriding the host memory the numeric simulation may use (bytes)
ENV_VAR = "PROFCOMPARE_SIM_HOST_MEMORY"

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_bytes(text: str) -> int:
    """``"1073741824"``, ``"512MiB"``, ``"1.5 GiB"`` -> bytes; ProfcompareError for anything else."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ProfcompareError(f"{ENV_VAR} must be a number of bytes (optionally with KiB, MiB, GiB or TiB), "
                               f"got {text!r}")
    return int(float(match.group(1)) * _UNITS[unit])


def available_bytes(environ: Mapping[str, str] | None = None) -> tuple[int | None, str]:
    """Return (bytes the numeric simulation may use, where that figure comes from); (None, ...)
    when the system does not say."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_VAR, "").strip()
    if override:
        return parse_bytes(override), ENV_VAR
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable"
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "available physical pages"
    except (OSError, ValueError, AttributeError):
        return None, "unknown"


def _nbytes(shape: tuple[int, ...], itemsize: int) -> int:
    return math.prod(shape) * itemsize


def session_bytes(ir: Ir) -> int:
    """Host bytes a numeric Session of ``ir`` holds (see the module docstring for what counts)."""
    r = ir.replication_factor
    total = 0
    for v in ir._variables:
        size = _nbytes(v.shape, v.dtype.as_numpy().itemsize)
        groups = v.replica_grouping.num_groups
        if v._memmap_arr is None:
            total += 2 * size * groups  # popxl.variable's copy and the Session's
        if v._remote_buffer is None:
            total += r * size
        if v.retrieval_mode == "all_replicas" and v.replica_grouping.group_size > 1:
            total += r * size
    for buf in ir._remote_buffers.values():
        total += r * buf.entries * _nbytes(tuple(buf.tensor_shape), buf.tensor_dtype.as_numpy().itemsize)
    for t in ir._replica_shards:
        total += r * _nbytes(t.shape, t.dtype.as_numpy().itemsize)
    return total


def variable_bytes(host_nbytes: int, shape: tuple[int, ...], itemsize: int, replicas: int, memmap: bool) -> int:
    """Host bytes a numeric Session will hold for one on-chip variable: its two host copies
    (none for a memmap) and one device copy per replica."""
    return (0 if memmap else 2 * host_nbytes) + replicas * _nbytes(shape, itemsize)


def check_variables(ir: Ir, what: str) -> None:
    """:func:`check` of the running estimate of ``ir``'s variables (``ir._numeric_host_bytes``),
    against the limit read once per Ir (a variable is created in microseconds; /proc is not)."""
    if ir._host_memory_limit is None:
        ir._host_memory_limit = available_bytes()
    check(ir._numeric_host_bytes, what, limit=ir._host_memory_limit)


def check(estimate: int, what: str, environ: Mapping[str, str] | None = None,
          limit: tuple[int | None, str] | None = None) -> None:
    """Raise SimulatorHostMemoryError when ``estimate`` bytes exceed what is available (``limit``:
    an :func:`available_bytes` result to use instead of asking again)."""
    available, source = limit if limit is not None else available_bytes(environ)
    if available is None or estimate <= available:
        return
    raise SimulatorHostMemoryError(
        f"numeric simulation needs at least {_gib(estimate)} of host memory for {what}, more than the "
        f"{_gib(available)} available ({source}); profile it with --compile-only (or "
        f"PROFCOMPARE_SIM_EXECUTION=compile-only): memory and time are modelled the same, no values are computed")


def _gib(n: int) -> str:
    unit, scale = next((u, s) for u, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1))
                       if n >= s or s == 1)
    return f"{n / scale:.1f} {unit} ({n:,} bytes)"


__all__ = ["ENV_VAR", "available_bytes", "check", "check_variables", "parse_bytes", "session_bytes", "variable_bytes"]
