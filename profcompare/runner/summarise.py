"""What a run means: open the staged reports, compare the base with every other variant and
tabulate all variants side by side (the N-way table); :func:`run_variants` ties the stages
together. The pages (``compare-<base>-vs-<new>.html/.md/.json``, ``index.html``, ``index.json``)
are written by the caller's :class:`RunPages` into the staging directory, so they are published
with the run; the runner itself never renders.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from profcompare.perf import collector
from profcompare.errors import (
    ProfcompareError,
)
from profcompare.runner.results import ComparisonOutcome, JobOutcome, ProgressCallback, RunResult, replace_result
from profcompare.runner.forked import can_fork
from profcompare.runner.plan import check_run_name, default_run_name, make_jobs, resolve_backend
from profcompare.runner.rundir import unique_run_name
from profcompare.runner.execute import execute_jobs

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report


@dataclass(frozen=True)
class RunPages:
    """How a run's pages are written into its staging directory, before the run is published.

    ``comparison(comparison, directory, stem)`` writes one comparison's files
    (``<stem>.<extension>``) and returns renderer name -> extension, in the order written;
    ``extensions`` are removed again when a comparison fails half-way. ``index(result, directory,
    comparisons, table)`` writes the run's N-way view and returns file key -> file name.
    ``prewarm`` imports what writing needs (called in a thread while the variants run).
    """

    comparison: Callable[[Any, Path, str], Mapping[str, str]]
    index: Callable[[RunResult, Path, tuple[ComparisonOutcome, ...], Any], Mapping[str, str]]
    extensions: tuple[str, ...]
    prewarm: Callable[[], None] | None = None


def open_staged_report(outcome: JobOutcome, staging: Path) -> Report:
    """Open ``outcome``'s report from the staging directory, labelled with its final path."""
    from profcompare.readers import open_report

    report = open_report(staging / outcome.label)
    return report.with_meta(report.meta.replace(source=str(outcome.directory)))


def _prewarm_comparison_imports(*, in_thread: bool, pages: RunPages | None = None) -> None:
    """Import the comparison stack and what ``pages`` write with: in a thread while the variants'
    subprocesses work (saves wall time), or at once when the variants are forked from this process
    (no import may be half done in another thread when it forks; see :mod:`.forked`)."""

    def work() -> None:
        with contextlib.suppress(Exception):
            import profcompare.comparison
            import profcompare.readers  # noqa: F401

            if pages is not None and pages.prewarm is not None:
                pages.prewarm()

    if in_thread:
        threading.Thread(target=work, name="profcompare-prewarm", daemon=True).start()
    else:
        with collector.importing():
            work()


def compare_outcomes(result: RunResult, staging: Path, pages: RunPages | None = None) -> tuple[ComparisonOutcome, ...]:
    """Compare the first job (base) with every other job that has a report.

    ``pages`` writes each comparison's files (``compare-<base>-vs-<new>.html``, ``.md``,
    ``.json``) into ``staging``. Returns one ComparisonOutcome each (file paths final). No
    comparison when the base has no report. A comparison that cannot be made (an unreadable
    report, say) does not raise: its outcome carries the error and no files, so the run itself
    is still published.
    """
    from profcompare.comparison import compare

    base = result.outcomes[0]
    others = [o for o in result.outcomes[1:] if o.has_report]
    if not base.has_report or not others:
        return ()
    base_report: Report | None = None
    comparisons = []
    for other in others:
        files: dict[str, Path] = {}
        stem = comparison_stem(base.label, other.label)
        try:
            if base_report is None:
                base_report = open_staged_report(base, staging)
            comparison = compare(base_report, open_staged_report(other, staging))
            if pages is not None:
                for renderer_name, ext in pages.comparison(comparison, staging, stem).items():
                    files[renderer_name] = result.directory / f"{stem}.{ext}"
        except Exception as exc:  # noqa: BLE001 - the runs are worth keeping even if a comparison fails
            for ext in pages.extensions if pages is not None else ():
                (staging / f"{stem}.{ext}").unlink(missing_ok=True)
            error = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, ProfcompareError):
                error = f"{type(exc).__name__}: {error}"
            comparisons.append(ComparisonOutcome(base.label, other.label, None, MappingProxyType({}), error))
            continue
        comparisons.append(ComparisonOutcome(base.label, other.label, comparison, MappingProxyType(files)))
    return tuple(comparisons)


def comparison_stem(base: str, new: str) -> str:
    """The file name (without extension) of the comparison of ``new`` with ``base``."""
    return f"compare-{base}-vs-{new}"


def run_nway(result: RunResult, staging: Path, comparisons: tuple[ComparisonOutcome, ...]) -> Any:
    """The run's N-way table: one column per variant in run order (the first is the base), its
    report's summary metrics (NaN when it has none or it cannot be read) and its status."""
    from profcompare.analysis.nway import nway_table

    reports: list[tuple[str, Any]] = []
    opened = {c.base: c.comparison.base for c in comparisons if c.comparison is not None}
    opened.update({c.new: c.comparison.new for c in comparisons if c.comparison is not None})
    for outcome in result.outcomes:
        report = opened.get(outcome.label)
        if report is None and outcome.has_report:
            try:
                report = open_staged_report(outcome, staging)
            except ProfcompareError:
                report = None
        reports.append((outcome.label, report))
    return nway_table(reports, statuses={o.label: o.status for o in result.outcomes})


def run_execution(result: RunResult) -> str:
    """How a run's programs executed, from its run.json files: "compile-only" when any job ran
    compile-only, else "numeric"."""
    modes = {o.info.get("execution") for o in result.outcomes}
    return "compile-only" if "compile-only" in modes else "numeric"


def run_variants(
    variants: Sequence[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    workload: str | None = None,
    backend: str = "auto",
    out: str | os.PathLike[str] = "reports",
    name: str | None = None,
    jobs: int = 1,
    force: bool = False,
    pages: RunPages | None = None,
    progress: ProgressCallback | None = None,
    environ: Mapping[str, str] | None = None,
    execution: str | None = None,
) -> RunResult:
    """Build and run ``variants`` with autoReport, then compare the first with each other one.

    ``overrides`` maps knob names to values (strings are parsed) applied to every variant;
    ``workload`` (a workload name) finds the variants in that workload only (default: by name
    across the workloads).
    Returns the RunResult (``comparisons``, ``nway`` and ``files`` filled); the run lives in
    ``<out>/<name>/`` with one directory per variant and the files ``pages`` writes (the command
    line's: ``compare-<base>-vs-<new>.{html,md,json}`` and the N-way view ``index.html`` /
    ``index.json``; none without ``pages``). ``name`` defaults to
    the local timestamp plus the variants. Raises WorkloadError for bad variants or knob values,
    OutputExistsError when the run exists and not ``force``. ``execution`` is the simulator's
    execution mode (numeric | compile-only; see :func:`execute_jobs`).
    """
    job_list = make_jobs(variants, overrides, workload)
    if name is not None:
        run_name = check_run_name(name)
    else:
        run_name = unique_run_name(Path(out), default_run_name([j.label for j in job_list]))
    if len(job_list) > 1:
        try:
            resolved = resolve_backend(backend)
        except ProfcompareError:
            resolved = "unknown"  # execute_jobs says why
        forking = all(can_fork(job, resolved, environ) for job in job_list)
        _prewarm_comparison_imports(in_thread=not forking, pages=pages)

    def finalize(result: RunResult, staging: Path) -> RunResult:
        comparisons = compare_outcomes(result, staging, pages)
        table = run_nway(result, staging, comparisons)
        written = {} if pages is None else pages.index(result, staging, comparisons, table)
        files = {key: result.directory / name for key, name in written.items()}
        return replace_result(result, comparisons=comparisons, files=files, nway=table)

    return execute_jobs(
        job_list,
        out=out,
        name=run_name,
        backend=backend,
        parallel=jobs,
        force=force,
        progress=progress,
        environ=environ,
        finalize=finalize,
        execution=execution,
    )


__all__ = [
    "RunPages",
    "compare_outcomes",
    "comparison_stem",
    "open_staged_report",
    "run_execution",
    "run_nway",
    "run_variants",
]
