"""How many threads numpy's BLAS library runs in a workload variant, and in the command that forks it.

A workload variant's matmuls are small (micro-batches of 8 rows): BLAS worker threads gain it no
time, and while idle they spin. So a variant runs with one BLAS thread
(:data:`VARIANT_THREAD_VARIABLES`) unless its environment says otherwise.

A variant forked from the runner (:mod:`profcompare.runner.forked`) inherits the BLAS library
the runner loaded, with the thread count the runner's environment had when numpy was first
imported. Lowered in the child afterwards (``threadpoolctl``), OpenBLAS starts a worker thread
there again, which stays busy beside the calling thread: a child's loop of MNIST-sized matmuls
took 0.29 CPU seconds for 0.20 of wall time, and a whole MNIST variant 0.55-0.59 CPU seconds
against 0.43-0.46 when the runner's BLAS had started with one thread (OpenBLAS 0.3.31, numpy
2; measured by forking a process that had imported numpy either way). So the command line
(:func:`loaded_as_variants_run`) gives its own process the variants' thread counts before
numpy is first imported: the library every forked variant inherits is already the one it wants.
The command's own work (comparing reports, writing pages) calls BLAS for nothing of size.

It imports only the standard library: it runs before numpy is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

#: Thread counts of numpy's BLAS in a workload variant's process, unless the caller's environment
#: sets them: idle BLAS worker threads spin, which cost 0.4 CPU seconds of each MNIST variant's 1.6
#: (measured with benchmarks/bench_run.py; jobs run side by side anyway).
VARIANT_THREAD_VARIABLES = MappingProxyType({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                                             "MKL_NUM_THREADS": "1"})

#: the thread variables this process's BLAS library was loaded with, when
#: :func:`loaded_as_variants_run` set them before numpy was imported (else None: unknown)
_loaded_with: dict[str, str] | None = None
#: the variables :func:`loaded_as_variants_run` has added to this process's environment, while
#: it runs
_added: tuple[str, ...] = ()


@contextmanager
def loaded_as_variants_run(environ: dict[str, str] | None = None) -> Iterator[bool]:
    """While the body runs, give this process's environment the variants' BLAS thread counts
    (each variable the environment does not set already) when numpy is not imported yet, so the
    BLAS library numpy loads in the body starts as a forked variant runs it. Yields False and
    changes nothing when numpy is already imported (its BLAS library is loaded: the variables
    would change nothing but the environment of the programs this process starts).

    Afterwards the environment is as it was, and this process's BLAS is known to run with these
    counts (:func:`loaded_as`) only when the body imported numpy: a process that embeds the
    command line (a test, a notebook) keeps its own settings for what it does next."""
    global _loaded_with, _added
    env = os.environ if environ is None else environ
    if "numpy" in sys.modules:
        yield False
        return
    added = tuple(name for name in VARIANT_THREAD_VARIABLES if name not in env)
    for name in added:
        env[name] = VARIANT_THREAD_VARIABLES[name]
    before = _added
    _added = tuple(dict.fromkeys(before + added))
    _loaded_with = {name: env[name] for name in VARIANT_THREAD_VARIABLES}
    try:
        yield True
    finally:
        for name in added:
            if env.get(name) == VARIANT_THREAD_VARIABLES[name]:
                del env[name]
        _added = before
        if "numpy" not in sys.modules:
            _loaded_with = None  # BLAS is not loaded yet: whoever imports numpy next decides


def loaded_as(env: Mapping[str, str]) -> bool:
    """True when this process's BLAS library was loaded with the thread counts ``env`` asks for
    (a child forked from this process needs no change of them)."""
    return _loaded_with is not None and all(env.get(name) == value for name, value in _loaded_with.items())


def without_added(env: dict[str, str]) -> dict[str, str]:
    """``env`` (made from this process's environment) without the variables
    :func:`loaded_as_variants_run` added: a user's program gets the environment it was given."""
    for name in _added:
        if env.get(name) == VARIANT_THREAD_VARIABLES[name]:
            env.pop(name)
    return env


__all__ = ["VARIANT_THREAD_VARIABLES", "loaded_as", "loaded_as_variants_run", "without_added"]
