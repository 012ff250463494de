"""profcompare: build, run and compare IPU memory and cycle profiles of popxl workloads.

Public API::

    import profcompare as pc
    base = pc.open_report("reports/r1/onchip")
    new = pc.open_report("reports/r1/offchip-sharded")
    diff = pc.compare(base, new)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profcompare.base import presenters as _presenters
from profcompare._version import __version__
from profcompare.errors import (
    EngineOptionsError,
    IpuOutOfMemoryError,
    OutputExistsError,
    ProfcompareError,
    ReportFormatError,
    ReportValidationError,
    SdkUnavailableError,
    UnsupportedReportVersion,
    WorkloadError,
)

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.comparison import Comparison, compare
    from profcompare.model import Report, ReportMeta, Target
    from profcompare.readers import open_report
    from profcompare.commands.api import Run, advise, run

#: Public names and the module that holds each. They are imported on first use, so that
#: ``import profcompare`` (and the command line's start-up) does not pay for pandas until a
#: report is actually opened.
_LAZY = {
    "Report": "profcompare.model",
    "ReportMeta": "profcompare.model",
    "Target": "profcompare.model",
    "Comparison": "profcompare.comparison",
    "compare": "profcompare.comparison",
    "open_report": "profcompare.readers",
    "run": "profcompare.commands.api",
    "advise": "profcompare.commands.api",
    "Run": "profcompare.commands.api",
}


def _register_analysis_methods() -> None:
    """Let the analysis and comparison layers register the derived tables (``report.ledger()``,
    ``report.live_at_peak()``, ``report.tile_detail()``, ``diff.tile_detail()``)."""
    from profcompare.analysis import ledger, tile_detail
    from profcompare.comparison import tile_detail as comparison_tile_detail

    ledger.register_report_methods()
    tile_detail.register_report_methods()
    comparison_tile_detail.register_comparison_methods()


def _register_render_presenters() -> None:
    """Let the render layer register the display and plot methods of Report and Comparison
    (``report._repr_html_()``, ``diff.plot_liveness()``, ...: see :mod:`profcompare.base.presenters`)."""
    from profcompare.render.notebook import register_presenters

    register_presenters()


# Run when a notebook first displays or plots a report, not now: the renderers import
# matplotlib and Jinja2, which the command line's start-up does not pay for.
_presenters.register_loader(_register_analysis_methods)
_presenters.register_loader(_register_render_presenters)


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'profcompare' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


__all__ = [
    "__version__",
    "advise",
    "Comparison",
    "EngineOptionsError",
    "IpuOutOfMemoryError",
    "OutputExistsError",
    "ProfcompareError",
    "Report",
    "ReportFormatError",
    "ReportMeta",
    "ReportValidationError",
    "SdkUnavailableError",
    "Target",
    "UnsupportedReportVersion",
    "WorkloadError",
    "compare",
    "open_report",
    "run",
    "Run",
]
