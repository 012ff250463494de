"""profcompare: build, run and compare IPU memory and cycle profiles of popxl workloads.

Public API::

    import profcompare as pc
    base = pc.open_report("reports/r1/onchip")
    new = pc.open_report("reports/r1/offchip-sharded")
    diff = pc.compare(base, new)
"""

from __future__ import annotations

__version__ = "0.1.0"

from profcompare.errors import (  # noqa: E402
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
from profcompare.model import Report, ReportMeta, Target  # noqa: E402
from profcompare.compare import Comparison, compare  # noqa: E402
from profcompare.readers import open_report  # noqa: E402

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
