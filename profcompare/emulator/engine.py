"""The simulator's Engine: compiles a LoweredProgram and honours Poplar's autoReport options.

A ``Session`` of the popxl emulator creates one Engine when it is constructed (that is the
compile), calls :meth:`Engine.on_run` after every run of the main program and
:meth:`Engine.on_detach` when its ``with`` block ends. Like a popxl Session on Poplar:

- ``POPLAR_ENGINE_OPTIONS`` (JSON) is read from ``environ``; malformed JSON, unknown
  ``autoReport.*`` keys or bad values raise EngineOptionsError.
- With ``autoReport.all`` or ``autoReport.outputGraphProfile`` the graph profile is written
  at compile time to ``<autoReport.directory or cwd>/profile.sqlite`` (popxl sessions have no
  engine name, so there is no subdirectory; an existing profile there is replaced, as Poplar
  replaces it).
- With the execution profile on (``all`` or ``outputExecutionProfile``), the first
  ``autoReport.executionProfileProgramRunCount`` runs (default 2) are profiled; the file is
  rewritten with the execution table once that many runs have happened, or at detach if
  fewer did (a copy of the graph profile's file with only the execution tables written again).
  The execution profile lives in the same file, so it is written only together with the graph
  profile.
- A program that does not fit still gets its report (flagged oom), then IpuOutOfMemoryError is
  raised, unless ``debug.allowOutOfMemory`` is "true".

- The last report written stays in memory (:func:`written_report`), so the process that ran a
  variant takes its figures (run.json's ``summary``) without reading the file back.

The device is Mk2 unless ``PROFCOMPARE_SIM_TARGET`` (mk1 | mk2 | bow) says otherwise. The
report's ``meta.execution`` says how the Session executes (``PROFCOMPARE_SIM_EXECUTION``: numeric |
compile-only); the compile does not depend on it.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from profcompare.backend import execution_mode
from profcompare.emulator.compile import CompiledProgram, compile_program
from profcompare.emulator.compile.engine_options import (
    EngineOptions,
    engine_options_from_environ,
)
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import get_device
from profcompare.errors import IpuOutOfMemoryError, ProfcompareError

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.readers.store import WrittenStore

TARGET_ENV_VAR = "PROFCOMPARE_SIM_TARGET"
REPORT_FILE = "profile.sqlite"

#: the last report this process wrote: resolved path -> what the write put in the file
#: (:class:`profcompare.readers.store.WrittenStore`: the file's identity right after the write,
#: the Report), so the process that ran a variant can take the report's figures without reading
#: the file back (:func:`written_report`). One entry at most: a process that writes many
#: reports (a notebook) keeps only the latest in memory
_WRITTEN: dict[str, WrittenStore] = {}


def written_report(path: str | os.PathLike[str]):  # -> profcompare.model.Report | None
    """The Report this process wrote last, when it wrote it to the report file ``path`` and the file
    is still the one it wrote (same inode, size and modification time); else None (read the file)."""
    from profcompare.readers.store import file_identity

    resolved = pathlib.Path(path).resolve()
    stored = _WRITTEN.get(str(resolved))
    if stored is None or file_identity(resolved) != stored.identity:
        return None
    return stored.report


def forget_written() -> None:
    """Drop the reports :func:`written_report` keeps (a process that runs many jobs, after each)."""
    _WRITTEN.clear()


class Engine:
    """Compiles a LoweredProgram at construction, writes autoReport output, tracks runs."""

    def __init__(self, program: LoweredProgram, device: str = "ipu_model",
                 environ: Mapping[str, str] = os.environ) -> None:
        self.device = device
        self.options: EngineOptions = engine_options_from_environ(environ)
        self.spec = get_device(environ.get(TARGET_ENV_VAR))
        self.compiled: CompiledProgram = compile_program(program, self.spec)
        execution = execution_mode.current(environ)  # how the Session executes, as it reads it
        if execution != self.compiled.report.meta.execution:
            report = dataclasses.replace(self.compiled.report,
                                         meta=self.compiled.report.meta.replace(execution=execution))
            self.compiled = dataclasses.replace(self.compiled, report=report)
        self.runs = 0
        self.profiled_runs = 0
        self._written_runs = -1
        self.report_path: pathlib.Path | None = None
        self._stored = None  # what the last write put in the report file (readers.store.WrittenStore)
        if self.options.graph_profile:
            self.report_path = pathlib.Path(self.options.report_directory) / REPORT_FILE
            self._write(0)
        if self.compiled.oom and not self.options.allow_out_of_memory:
            raise IpuOutOfMemoryError(self.compiled.oom_message(),
                                      str(self.report_path) if self.report_path else None)

    @property
    def report(self):  # -> profcompare.model.Report
        """The report as it stands: graph profile plus the execution runs profiled so far."""
        runs = self.profiled_runs if self.options.execution_profile else 0
        return self.compiled.with_execution(runs)

    def _write(self, runs: int) -> None:
        if self.report_path is None:
            return
        from profcompare.readers.store import write_report_kept

        try:
            self.report_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ProfcompareError(f"cannot create autoReport.directory {str(self.report_path.parent)!r}: {exc}") from None
        report = self.compiled.with_execution(runs)
        # the execution profile's write after the graph profile's copies the file and writes
        # only the tables the runs changed (the graph profile's tables are the same frames);
        # the report was built by Report's constructor, which checked it, and is not changed
        self._stored = write_report_kept(report, self.report_path, overwrite=True, previous=self._stored,
                                         checked=True)
        self._written_runs = runs
        _WRITTEN.clear()
        _WRITTEN[str(self.report_path.resolve())] = self._stored

    def on_run(self) -> None:
        """Called after every run of the main program: counts it and profiles the first N."""
        self.runs += 1
        if not (self.options.graph_profile and self.options.execution_profile):
            return
        if self.profiled_runs < self.options.program_run_count:
            self.profiled_runs += 1
            if self.profiled_runs == self.options.program_run_count:
                self._write(self.profiled_runs)

    def on_detach(self) -> None:
        """Called when the Session detaches: writes the execution profile if runs are pending."""
        if (self.options.graph_profile and self.options.execution_profile and self.profiled_runs > 0
                and self._written_runs != self.profiled_runs):
            self._write(self.profiled_runs)
