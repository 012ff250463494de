"""The layout advisor: search a workload's layout space on the simulator, compile only.

- :mod:`~profcompare.advise.space`: the knobs a workload lets the advisor change, their
  candidate values, derived knobs and constraints; invalid points pruned with a reason;
- :mod:`~profcompare.advise.search`: exhaustive or NSGA-II (Optuna) search, points run through
  the runner as compile-only jobs;
- :mod:`~profcompare.advise.cache`: points reused from earlier advise runs by their full config;
- :mod:`~profcompare.advise.results`: points, fit, Pareto front, the verdict's facts;
- :mod:`~profcompare.advise.advisor`: :func:`run_advise` ties them together into an advise run.

``profcompare.advise(...)`` is :func:`run_advise`: this package is callable, so that the public
API name and the package name can be the same word.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from profcompare.advise.advisor import ADVISE_FILES, AdviseResult, find_space, run_advise


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`run_advise` (``pc.advise("mnist", ...)``)."""

    def __call__(self, workload: str, **options: Any) -> AdviseResult:
        return run_advise(workload, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["ADVISE_FILES", "AdviseResult", "find_space", "run_advise"]
