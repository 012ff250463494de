"""What a run means: open the staged reports, compare the base with every other variant and
write ``compare-<base>-vs-<new>.html/.md/.json``; :func:`run_variants` ties the stages together.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from profcompare.errors import (
    ProfcompareError,
)
from profcompare.runner.results import ComparisonOutcome, JobOutcome, ProgressCallback, RunResult, replace_result
from profcompare.runner.plan import check_run_name, default_run_name, make_jobs
from profcompare.runner.rundir import unique_run_name
from profcompare.runner.execute import execute_jobs

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report


#: formats written for every comparison of a run: renderer name -> file extension
COMPARISON_FORMATS = (("html", "html"), ("markdown", "md"), ("json", "json"))


def open_staged_report(outcome: JobOutcome, staging: Path) -> Report:
    """Open ``outcome``'s report from the staging directory, labelled with its final path."""
    from profcompare.readers import open_report

    report = open_report(staging / outcome.label)
    import dataclasses

    return dataclasses.replace(report, meta=report.meta.replace(source=str(outcome.directory)))


def _prewarm_comparison_imports() -> None:
    """Import the comparison and rendering stack while the subprocesses work (saves wall time)."""

    def work() -> None:
        with contextlib.suppress(Exception):
            import profcompare.compare
            import profcompare.readers  # noqa: F401
            from profcompare.render.base import get_renderer

            get_renderer("html")

    threading.Thread(target=work, name="profcompare-prewarm", daemon=True).start()


def compare_outcomes(result: RunResult, staging: Path, *, top: int = 20) -> tuple[ComparisonOutcome, ...]:
    """Compare the first job (base) with every other job that has a report.

    Writes ``compare-<base>-vs-<new>.html``, ``.md`` and ``.json`` into ``staging`` and returns one
    ComparisonOutcome each (file paths final). No comparison when the base has no report. A
    comparison that cannot be made (an unreadable report, say) does not raise: its outcome
    carries the error and no files, so the run itself is still published.
    """
    from profcompare.compare import compare
    from profcompare.render.base import get_renderer
    from profcompare.render.output import write_output

    base = result.outcomes[0]
    others = [o for o in result.outcomes[1:] if o.has_report]
    if not base.has_report or not others:
        return ()
    renderers = [(get_renderer(fmt), ext) for fmt, ext in COMPARISON_FORMATS]
    base_report: Report | None = None
    comparisons = []
    for other in others:
        files: dict[str, Path] = {}
        stem = f"compare-{base.label}-vs-{other.label}"
        try:
            if base_report is None:
                base_report = open_staged_report(base, staging)
            comparison = compare(base_report, open_staged_report(other, staging))
            for renderer, ext in renderers:
                # the json export is complete; the pages are cut to the top rows
                content = renderer.render(comparison, top=0 if renderer.name in ("json", "csv") else (top or 20))
                write_output(content, staging / f"{stem}.{ext}")
                files[renderer.name] = result.directory / f"{stem}.{ext}"
        except Exception as exc:  # noqa: BLE001 - the runs are worth keeping even if a comparison fails
            for ext in (e for _, e in COMPARISON_FORMATS):
                (staging / f"{stem}.{ext}").unlink(missing_ok=True)
            error = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, ProfcompareError):
                error = f"{type(exc).__name__}: {error}"
            comparisons.append(ComparisonOutcome(base.label, other.label, None, MappingProxyType({}), error))
            continue
        comparisons.append(ComparisonOutcome(base.label, other.label, comparison, MappingProxyType(files)))
    return tuple(comparisons)


def run_variants(
    variants: Sequence[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    backend: str = "auto",
    out: str | os.PathLike[str] = "reports",
    name: str | None = None,
    jobs: int = 1,
    force: bool = False,
    top: int = 20,
    progress: ProgressCallback | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunResult:
    """Build and run ``variants`` with autoReport, then compare the first with each other one.

    ``overrides`` maps knob names to values (strings are parsed) applied to every variant.
    Returns the RunResult (``comparisons`` filled); the run lives in ``<out>/<name>/`` with one
    directory per variant plus ``compare-<base>-vs-<new>.{html,md,json}``. ``name`` defaults to
    the local timestamp plus the variants. Raises WorkloadError for bad variants or knob values,
    OutputExistsError when the run exists and not ``force``.
    """
    job_list = make_jobs(variants, overrides)
    if name is not None:
        run_name = check_run_name(name)
    else:
        run_name = unique_run_name(Path(out), default_run_name([j.label for j in job_list]))
    if len(job_list) > 1:
        _prewarm_comparison_imports()

    def finalize(result: RunResult, staging: Path) -> RunResult:
        return replace_result(result, comparisons=compare_outcomes(result, staging, top=top))

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
    )


__all__ = ["COMPARISON_FORMATS", "compare_outcomes", "open_staged_report", "run_variants"]
