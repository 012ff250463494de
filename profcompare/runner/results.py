"""What a run produces: per-job outcomes, comparisons and the run result (plain frozen records),
and the progress callback's shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profcompare.runner.plan import Job

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.comparison import Comparison
    from profcompare.model import Report


#: stages a job goes through, in order, as the progress callback receives them
STAGES = ("queued", "starting", "building", "compiling", "running", "writing report", "done")


#: a job's status: ``incomplete`` when the run was stopped (Ctrl-C, SIGTERM, a timeout) while the
#: job ran and the Session reports it had already written were kept (execute.py)
STATUSES = ("ok", "oom", "failed", "incomplete")


#: the label progress events of the final step (comparisons, sweep tables) carry
FINALIZE_LABEL = "*"


#: ``progress(label, stage, info)``: ``info`` is {} or, for "done", {"status": ..., "error": ...}
ProgressCallback = Callable[[str, str, Mapping[str, Any]], None]


@dataclass(frozen=True)
class JobOutcome:
    """What happened to one job: its final directory and its ``run.json``."""

    job: Job
    directory: Path  # final location: <out>/<name>/<label>
    info: Mapping[str, Any]  # run.json

    @property
    def label(self) -> str:
        """The job's directory name (the variant for ``run``, the point label for ``sweep``)."""
        return self.job.label

    @property
    def status(self) -> str:
        """ok | oom | failed."""
        return str(self.info.get("status", "failed"))

    @property
    def error(self) -> str | None:
        """The error text folded onto one line (run.json keeps it whole), or None."""
        text = self.info.get("error")
        return None if text is None else " ".join(str(text).split())

    @property
    def report_files(self) -> tuple[str, ...]:
        """Report files relative to :attr:`directory`."""
        return tuple(self.info.get("report_files") or ())

    @property
    def has_report(self) -> bool:
        """True when the job left a report (always for ok, usually for oom)."""
        return bool(self.report_files)


@dataclass(frozen=True)
class ComparisonOutcome:
    """One comparison of a run: base vs new, and the files written for it (format -> path)."""

    base: str
    new: str
    comparison: Comparison | None
    files: Mapping[str, Path]
    error: str | None = None  # why the comparison could not be made (the run is kept anyway)


@dataclass(frozen=True)
class RunResult:
    """A finished run: where it lives, which backend ran it, what happened to every job."""

    name: str
    directory: Path
    backend: str
    outcomes: tuple[JobOutcome, ...]
    wall_seconds: float
    comparisons: tuple[ComparisonOutcome, ...] = ()
    files: Mapping[str, Path] = field(default_factory=dict)  # extra files (sweep tables, index pages)
    replaced: bool = False  # an existing run of the same name was replaced (force)
    nway: Any = None  # the N-way table of every variant side by side (profcompare.analysis.nway.NWayTable)

    @property
    def ok(self) -> bool:
        """True when every job finished with status ok and every comparison could be made."""
        return all(o.status == "ok" for o in self.outcomes) and not any(c.error for c in self.comparisons)

    def outcome(self, label: str) -> JobOutcome:
        """The outcome of the job labelled ``label`` (KeyError if none)."""
        for o in self.outcomes:
            if o.label == label:
                return o
        raise KeyError(label)

    def open_report(self, label: str) -> Report:
        """Open the report of job ``label`` (ReportFormatError when it has none)."""
        from profcompare.readers import open_report

        return open_report(self.outcome(label).directory)


def replace_result(result: RunResult, **changes: Any) -> RunResult:
    import dataclasses

    return dataclasses.replace(result, **changes)


__all__ = ["ComparisonOutcome", "FINALIZE_LABEL", "JobOutcome", "ProgressCallback", "RunResult", "STAGES", "STATUSES", "replace_result"]
