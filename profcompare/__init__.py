"""profcompare: build, run and compare IPU memory and cycle profiles of popxl workloads.

Public API::

    import profcompare as pc
    base = pc.open_report("reports/r1/onchip")
    new = pc.open_report("reports/r1/offchip-sharded")
    diff = pc.compare(base, new)
"""

from __future__ import annotations

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
from profcompare.model import Report, ReportMeta, Target
from profcompare.compare import Comparison, compare
from profcompare.readers import open_report

__all__ = [
    "__version__",
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
]
