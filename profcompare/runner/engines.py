"""Which engine a run's workload-variant jobs execute on: the local pool of warm workers
(:mod:`profcompare.runner.engine`) or a Dask cluster (:mod:`profcompare.runner.dask_engine`)."""

from __future__ import annotations

from profcompare.runner.engine import Engine, LocalPoolEngine


def make_engine(jobs: int = 1, dask: str | None = None) -> Engine:
    """The engine to run workload-variant jobs on: a local pool of ``jobs`` warm worker processes,
    or with ``dask`` a Dask cluster: ``"local:N"`` (a LocalCluster of N single-threaded worker
    processes; ``"local"`` = ``jobs`` of them) or a scheduler address (``tcp://host:8786``).

    A Dask scheduler is connected to here, so a bad address fails now (DaskUnreachableError, one
    line) and not once points run. Close the engine (or use it as a context manager) when done.
    """
    if dask is None or not str(dask).strip():
        return LocalPoolEngine(jobs)
    from profcompare.runner.dask_engine import DaskEngine

    return DaskEngine.connect(str(dask).strip(), jobs=jobs)


__all__ = ["make_engine"]
