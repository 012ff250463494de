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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.advise.advisor import ADVISE_FILES, AdviseResult, find_space, run_advise

#: names imported on first use: workload modules import :mod:`.space` to declare their spaces,
#: and that must not pull in pandas, the runner and the search
_LAZY = ("ADVISE_FILES", "AdviseResult", "find_space", "run_advise")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'profcompare.advise' has no attribute {name!r}")
    from profcompare.advise import advisor

    return getattr(advisor, name)


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`run_advise` (``pc.advise("mnist", ...)``)."""

    def __call__(self, workload: str, **options: Any) -> AdviseResult:
        from profcompare.advise.advisor import run_advise

        return run_advise(workload, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["ADVISE_FILES", "AdviseResult", "find_space", "run_advise"]
