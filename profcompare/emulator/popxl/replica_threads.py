"""Large kernels of the numeric executor run one part of the replica axis per thread.

Every value of the executor is an array with a leading replica axis, and the elementwise
kernels (``+ - * /``, casts, GELU), the softmax and the sums over other axes compute each
replica's rows from that replica's rows alone. numpy releases the GIL inside its
loops, so when a kernel's operands are large the replicas are split into as many contiguous
parts as there are threads and each thread computes one part: every element goes through the
same numpy operations as in one call, so the results are the same bits.

Where the time goes that this saves: a float16 ``+`` of numpy converts both operands to
float32 and the result back, element by element, about 8 ns an element (numpy 1.26 and 2.4 on
x86-64), so a T5 attention score of 2 replicas x 2 x 2 x 512 x 512 float16 values costs 35 ms
per operation. The threads divide a kernel's wall time, not its CPU time.

``PROFCOMPARE_SIM_THREADS`` sets the number of threads, at most the cores this process may
run on; by default 1, every kernel in the calling thread. Measured on T5's training under
``profcompare profile`` with 2 threads on a shared 2-core machine, the run took more CPU time
than in one thread (404 s and more, against 384), its wall time was not measurable there, and
the matmuls are left to numpy's BLAS, which runs threads of its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

ENV_VAR = "PROFCOMPARE_SIM_THREADS"
#: the most threads used: the replica axes of the simulated programs are short (2 to 16
#: replicas) and a kernel's parts are its replicas, so more threads than this seldom find work
#: (an assumption, not a measurement)
MAX_THREADS = 4
#: kernels with fewer elements in their largest operand run in the calling thread: handing a
#: part to a thread and joining it costs some tens of microseconds, the time numpy takes for
#: about 10,000 float16 elements; below 2**18 elements the gain is within the noise (an
#: assumption: the T5 kernels that gain are of 10**6 elements and more)
MIN_ELEMENTS = 1 << 18

_pool: ThreadPoolExecutor | None = None
#: the process and thread count the pool was made for (a forked child makes its own)
_pool_key: tuple[int, int] | None = None


def thread_count(environ: Any = None) -> int:
    """The number of threads large kernels use: ``PROFCOMPARE_SIM_THREADS`` when it is a
    positive integer, at most the cores this process may run on and :data:`MAX_THREADS`;
    else 1."""
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not (value.isdigit() and int(value) > 0):
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        cores = os.cpu_count() or 1
    return max(1, min(int(value), cores, MAX_THREADS))


#: guards the making of the pool (two threads asking at once make one)
_pool_lock = threading.Lock()

_THREAD_PREFIX = "profcompare-kernel"


def _executor(threads: int) -> ThreadPoolExecutor:
    global _pool, _pool_key
    key = (os.getpid(), threads)
    with _pool_lock:
        if _pool is None or _pool_key != key:
            # a pool inherited through fork has no threads in this process: make a new one
            _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=_THREAD_PREFIX)
            _pool_key = key
        return _pool


def parts(rows: int, threads: int) -> list[slice]:
    """``rows`` cut into ``min(threads, rows)`` contiguous slices of sizes differing by one at most."""
    n = max(1, min(threads, rows))
    bounds = [rows * i // n for i in range(n + 1)]
    return [slice(bounds[i], bounds[i + 1]) for i in range(n)]


def by_replica(fn: Callable[..., np.ndarray], *arrays: np.ndarray) -> np.ndarray:
    """``fn(*arrays)``, computed in parts of the leading (replica) axis on several threads when
    the operands are large. ``fn`` must compute each row of its result along axis 0 from that
    row of each operand alone (an operand whose leading axis is 1 is broadcast and given whole
    to every part) and return a new array. The result has the same values as ``fn(*arrays)``.
    numpy's floating-point error handling (``np.errstate``) of the caller applies in the
    threads too."""
    rows = max(a.shape[0] for a in arrays)
    if rows < 2 or max(a.size for a in arrays) < MIN_ELEMENTS:
        return fn(*arrays)
    threads = thread_count()
    # on one of the pool's own threads, waiting for the pool could wait for itself: run here
    if threads < 2 or threading.current_thread().name.startswith(_THREAD_PREFIX):
        return fn(*arrays)
    errors = np.geterr()

    def part(cut: slice) -> np.ndarray:
        with np.errstate(**errors):
            return fn(*(a[cut] if a.shape[0] > 1 else a for a in arrays))

    results = list(_executor(threads).map(part, parts(rows, threads)))
    return np.concatenate(results, axis=0)


__all__ = ["ENV_VAR", "MAX_THREADS", "MIN_ELEMENTS", "by_replica", "parts", "thread_count"]
