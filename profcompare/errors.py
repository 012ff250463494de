"""The one exception hierarchy of profcompare.

Every error a user can cause (bad input, missing SDK, a report that cannot be read, a workload
that does not fit) is a :class:`ProfcompareError`; the CLI turns these into a one-line message and
a non-zero exit code. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class ProfcompareError(Exception):
    """Base class of every error profcompare raises on purpose."""

    exit_code: int = 2


class ReportFormatError(ProfcompareError):
    """A file or directory is not a readable report (missing, empty, truncated, corrupt, foreign)."""


class UnsupportedReportVersion(ReportFormatError):
    """A report written by a newer (or unknown) version of the store format."""


class ReportValidationError(ProfcompareError):
    """A reader produced a table that does not match the documented Report model."""


class SdkUnavailableError(ProfcompareError):
    """The Poplar SDK (popxl, popxl_addons or pva) was asked for but cannot be imported."""


class WorkloadError(ProfcompareError):
    """A workload name, variant or knob value is not valid, or a workload failed to run."""


class OutputExistsError(ProfcompareError):
    """An output file or run directory already exists and ``--force`` was not given."""


class IpuOutOfMemoryError(ProfcompareError):
    """The compiled program does not fit in tile memory (the report is still written, flagged oom)."""

    def __init__(self, message: str, report_path: str | None = None) -> None:
        super().__init__(message)
        self.report_path = report_path


class Terminated(KeyboardInterrupt):
    """A termination signal (SIGTERM, SIGHUP) turned into an interrupt so a run cleans up;
    the command then exits with 128 + the signal number, as the shell expects."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


class ProfcompareWarning(UserWarning):
    """Something the user should know that does not stop the command (shown as one line)."""


class ProfileWarning(ProfcompareWarning):
    """A profile was read, but part of it is missing or assumed (the message says which)."""


class SameReportWarning(ProfcompareWarning):
    """A report was compared with itself: every delta is 0 by construction."""


class EngineOptionsError(ProfcompareError):
    """``POPLAR_ENGINE_OPTIONS`` is malformed or names an unknown option, as Poplar would reject it."""


__all__ = [
    "ProfcompareError",
    "ReportFormatError",
    "UnsupportedReportVersion",
    "ReportValidationError",
    "SdkUnavailableError",
    "WorkloadError",
    "OutputExistsError",
    "IpuOutOfMemoryError",
    "EngineOptionsError",
    "ProfcompareWarning",
    "ProfileWarning",
    "SameReportWarning",
    "Terminated",
]
