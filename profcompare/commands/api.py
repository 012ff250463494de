"""``profcompare.run(variants, **knobs) -> Run`` and ``profcompare.advise(workload, ...)``: the
run and advise commands for notebooks and scripts.

The same stages as ``profcompare run`` (plan, execute, publish, summarise in
:mod:`profcompare.runner`) and ``profcompare advise`` (:mod:`profcompare.advisor`), with the
same pages, without the terminal display: :func:`run` returns a :class:`Run` whose reports and
comparisons are one attribute away, :func:`advise` the AdviseResult.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from profcompare.runner import RunResult, run_variants


@dataclass(frozen=True, eq=False)
class Run:
    """A finished run: its directory, every variant's report, comparisons on demand."""

    result: RunResult
    _reports: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def directory(self) -> Any:
        """The run directory (``<out>/<name>/``)."""
        return self.result.directory

    @property
    def variants(self) -> tuple[str, ...]:
        """The variant labels, base first."""
        return tuple(o.label for o in self.result.outcomes)

    @property
    def reports(self) -> dict[str, Any]:
        """Every variant's Report that has one, by label (opened on first use)."""
        for outcome in self.result.outcomes:
            if outcome.label not in self._reports and outcome.has_report:
                self._reports[outcome.label] = self.result.open_report(outcome.label)
        return dict(self._reports)

    def compare(self, base: str | None = None, new: str | None = None, **options: Any) -> Any:
        """``compare(reports[base], reports[new])``; defaults: the first variant vs the second."""
        from profcompare.comparison import compare

        labels = self.variants
        base = base or labels[0]
        new = new or (labels[1] if len(labels) > 1 else labels[0])
        reports = self.reports
        return compare(reports[base], reports[new], **options)

    def table(self) -> Any:
        """A DataFrame: one row per summary metric, one column per variant (base first), plus
        each variant's status."""
        import pandas as pd

        from profcompare.base.readable import readable

        columns = {label: report.summary() for label, report in self.reports.items()}
        frame = pd.DataFrame(columns)
        frame.index.name = "metric"
        return readable(frame)

    def __repr__(self) -> str:
        states = ", ".join(f"{o.label} {o.status}" for o in self.result.outcomes)
        return f"<Run {self.result.name!r} at {self.directory}: {states}; backend {self.result.backend}>"


def run(
    variants: Sequence[str] | str,
    *,
    workload: str | None = None,
    backend: str = "auto",
    out: str | os.PathLike[str] = "reports",
    name: str | None = None,
    jobs: int = 1,
    force: bool = False,
    compile_only: bool = False,
    knobs: Mapping[str, Any] | None = None,
    **knob_values: Any,
) -> Run:
    """Run ``variants`` (e.g. ``["onchip", "offchip-sharded"]``) with the given knobs
    (``replicas=4``, ``hidden=256``, or ``knobs={...}``) and return the :class:`Run`.

    ``workload="gpt"`` finds the variants in that workload only (default: by name across the
    workloads, as ``profcompare run`` without ``--workload``).
    Writes the run directory exactly as ``profcompare run`` does. ``compile_only=True`` is
    ``--compile-only``: the simulator builds and compiles each program and models memory and time
    without computing values. Raises WorkloadError for bad variants or knobs and
    OutputExistsError when the run exists and not ``force``.
    """
    from profcompare.commands.pages import run_pages
    from profcompare.commands.run import command as run_command

    check_option_ranges(run_command, {"jobs": jobs})
    names = [variants] if isinstance(variants, str) else list(variants)
    overrides = {**(knobs or {}), **knob_values}

    result = run_variants(names, overrides=overrides, workload=workload, backend=backend, out=out, name=name, jobs=jobs, force=force,
                          execution="compile-only" if compile_only else None, pages=run_pages())
    return Run(result)


def check_option_ranges(command: Any, options: Mapping[str, Any]) -> None:
    """Raise a one-line WorkloadError for the first of ``options`` outside the range the click
    ``command``'s option of the same name declares, so a notebook is held to the ranges the
    command line is (None keeps the command's default and is not checked)."""
    import click

    from profcompare.errors import WorkloadError

    for param in command.params:
        if not isinstance(param, click.Option) or options.get(param.name or "") is None:
            continue
        if isinstance(param.type, (click.IntRange, click.FloatRange)):
            value = options[param.name or ""]
            try:
                param.type.convert(value, param, None)
            except click.BadParameter as error:
                raise WorkloadError(f"bad {param.name}={value!r}: {error.message}") from None


def advise(workload: str, **options: Any) -> Any:
    """Search ``workload``'s layout space on the simulator and return the AdviseResult, writing the
    advise run (advise.json, advise.csv, advise.html, the front's report pages) as ``profcompare
    advise`` does; ``options`` are :func:`profcompare.advisor.run_advise`'s."""
    from profcompare.advisor import run_advise
    from profcompare.commands.advise import command as advise_command
    from profcompare.commands.pages import advise_pages

    check_option_ranges(advise_command, options)
    return run_advise(workload, **{"pages": advise_pages(), **options})


__all__ = ["Run", "advise", "check_option_ranges", "run"]
