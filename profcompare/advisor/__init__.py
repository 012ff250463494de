"""The layout advisor: search a workload's layout space on the simulator, compile only.

- :mod:`~profcompare.advisor.space`: the knobs a workload lets the advisor change, their
  candidate values, derived knobs and constraints; invalid points pruned with a reason;
- :mod:`~profcompare.advisor.search`: exhaustive or NSGA-II (Optuna) search, points run through
  the runner as compile-only jobs;
- :mod:`~profcompare.advisor.cache`: points reused from earlier advise runs by their full config;
- :mod:`~profcompare.analysis.advise_results`: points, fit, Pareto front, the verdict's facts;
- :mod:`~profcompare.advisor.advisor`: :func:`run_advise` ties them together into an advise run.

``profcompare.advise(...)`` (:func:`profcompare.commands.api.advise`) is :func:`run_advise` with
the pages of ``profcompare advise``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.advisor.advisor import AdviseResult, find_space, run_advise

#: names imported on first use: importing :mod:`.space` (the command line's option parsing does)
#: must not pull in pandas, the runner and the search
_LAZY = ("AdviseResult", "find_space", "run_advise")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'profcompare.advisor' has no attribute {name!r}")
    from profcompare.advisor import advisor

    return getattr(advisor, name)


__all__ = ["AdviseResult", "find_space", "run_advise"]
