"""Readers: turn report files into :class:`~profcompare.model.Report` objects.

:func:`open_report` is the one entry point users need. It accepts

* a run directory ``reports/<run>/<variant>/`` holding ``run.json`` and the backend's report
  (``profile.sqlite`` or ``profile.pop``); ``meta.workload``, ``variant``, ``config``,
  ``layout`` and ``samples_per_step`` then come from ``run.json``;
* a report directory: ours (``profile.sqlite``) or Poplar's autoReport layout, with
  ``profile.pop`` directly inside or inside one engine-named subdirectory (``training/``,
  ``inference/``, ``tf_report__...``);
* a file, whose reader is chosen by content (SQLite header, ``application_id``, tables), the
  extension only deciding what cannot be known from the bytes: Graph Analyser's cache
  (``profile.pop_cache``, an ``execution_trace_blocks_*`` table) opens as its execution trace.

Anything that is not a readable report raises :class:`~profcompare.errors.ReportFormatError`
naming the path and what is wrong with it (``SdkUnavailableError`` for a Poplar profile when
the SDK is missing).
"""

from __future__ import annotations

import json
import os
import pathlib
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from profcompare.errors import ReportFormatError, ReportValidationError
from profcompare.model import Report, ReportMeta
from profcompare.readers import ga_cache, store
from profcompare.readers.sqlite_uri import read_only_uri

if TYPE_CHECKING:
    from profcompare.readers.pva import Progress

#: File names of reports inside a report directory, in order of preference.
REPORT_FILENAMES = (store.DEFAULT_FILENAME, "profile.pop")
RUN_FILENAME = "run.json"
DEBUG_FILENAME = "debug.cbor"

# Tables a Poplar profile.pop holds (reference/pva.md section 3.1, one third-party source; an
# SQLite file with any of them and without our application_id is taken for a Poplar profile).
_POPLAR_TABLES = frozenset({"programs", "compute_sets", "steps", "steps_by_ipu", "vars_info", "var_categories", "memory_by_tile"})


def open_report(path: str | os.PathLike[str], *, code: bool = True, progress: Progress | None = None) -> Report:
    """Open a run directory, a report directory or a report file and return its Report.

    See the module docstring for what is accepted. Returns the Report with ``meta.source`` set
    to the report file read; with a ``run.json`` beside it, ``meta.workload``, ``variant``,
    ``config``, ``layout`` and ``samples_per_step`` come from the run (and an ``oom`` run is flagged oom).
    ``code`` and ``progress`` apply to Poplar profiles (see :func:`profcompare.readers.pva.read_pva`):
    ``code=False`` skips the slow per-program code of big profiles. What the file system
    refuses (a name too long, a directory that cannot be listed) is a ReportFormatError too.
    """
    if not str(path).strip():
        # pathlib reads "" as ".": an unset shell variable must not open the current directory
        raise ReportFormatError("empty report path; give a run directory, a report directory or a report file")
    given = pathlib.Path(path)
    try:
        return _open_path(given, code=code, progress=progress)
    except OSError as exc:
        raise ReportFormatError(f"{exc.filename or given}: cannot open: {exc.strerror or exc}") from None


def open_report_meta(path: str | os.PathLike[str]) -> ReportMeta:
    """The ``meta`` of the report :func:`open_report` opens at ``path``. A report directory
    without a ``run.json`` whose report is a profcompare store gives its meta alone (its tables
    are not read: a child of the runner checks its own report so, before writing run.json);
    anything else is opened whole. Raises as :func:`open_report` does."""
    given = pathlib.Path(path)
    try:
        if str(path).strip() and given.is_dir() and not (given / RUN_FILENAME).exists():
            file = _find_report_file(given, None)
            if file.is_file() and store.is_store_header(store.read_header(file)):
                return store.read_meta(file)
    except OSError as exc:
        raise ReportFormatError(f"{exc.filename or given}: cannot open: {exc.strerror or exc}") from None
    return open_report(path).meta


def _open_path(given: pathlib.Path, *, code: bool, progress: Progress | None) -> Report:
    if not given.exists():
        raise ReportFormatError(f"{given}: no such file or directory")
    if given.is_file() and given.name == RUN_FILENAME:
        given = given.parent
    if given.is_dir():
        run = _load_run(given / RUN_FILENAME) if (given / RUN_FILENAME).is_file() else None
        report_file = _find_report_file(given, run)
        report = _open_file(report_file, root=given, code=code, progress=progress)
        return _apply_run(report, run, given / RUN_FILENAME) if run is not None else report
    return _open_file(given, root=given.parent, code=code, progress=progress)


def _load_run(path: pathlib.Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFormatError(f"{path}: cannot read run description: {exc}") from None
    try:
        run = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportFormatError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ReportFormatError(f"{path}: nested too deeply to be a run description") from None
    if not isinstance(run, dict):
        raise ReportFormatError(f"{path}: expected a JSON object, found {type(run).__name__}")
    return run


def _find_report_file(directory: pathlib.Path, run: Mapping[str, Any] | None) -> pathlib.Path:
    candidates: list[pathlib.Path] = []
    if run is not None:
        listed = run.get("report_files") or []
        if isinstance(listed, list):
            candidates += [directory / str(name) for name in listed]
    candidates += [directory / name for name in REPORT_FILENAMES]
    for candidate in candidates:
        if candidate.is_file() and candidate.name != RUN_FILENAME and candidate.suffix != ".cbor":
            return candidate
    # Poplar autoReport with a named engine: <dir>/<engine>/profile.pop
    try:
        nested = sorted(
            sub / name
            for sub in directory.iterdir()
            if sub.is_dir()
            for name in REPORT_FILENAMES
            if (sub / name).is_file()
        )
    except OSError as exc:
        raise ReportFormatError(f"{directory}: cannot list: {exc.strerror or exc}") from None
    if len(nested) == 1:
        return nested[0]
    if len(nested) > 1:
        names = ", ".join(str(p.relative_to(directory)) for p in nested)
        raise ReportFormatError(f"{directory}: holds several reports ({names}); open one of them")
    if run is not None and run.get("status") in ("failed", "oom"):
        error = run.get("error") or "no error message recorded"
        raise ReportFormatError(f"{directory}: run {run.get('status')} without a report: {error}")
    raise ReportFormatError(
        f"{directory}: no report found (expected {' or '.join(REPORT_FILENAMES)} here or in one engine subdirectory)"
    )


def _open_file(file: pathlib.Path, *, root: pathlib.Path, code: bool = True, progress: Progress | None = None) -> Report:
    if not file.is_file():
        raise ReportFormatError(f"{file}: not a regular file")
    try:
        size = file.stat().st_size
        header = store.read_header(file)
    except OSError as exc:
        raise ReportFormatError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if size == 0:
        raise ReportFormatError(f"{file}: empty file")
    if store.is_store_header(header):
        return store.open_store(file)
    if store.is_sqlite_header(header):
        names = _table_names(file) if file.suffix != ".pop" else frozenset()
        if ga_cache.blocks_table(names) is not None and not names & _POPLAR_TABLES:
            return ga_cache.read_ga_cache(file)
        if file.suffix == ".pop" or names & _POPLAR_TABLES:
            return _read_poplar(file, root, code=code, progress=progress)
        raise ReportFormatError(
            f"{file}: an SQLite database but neither a profcompare report nor a Poplar profile"
        )
    if file.suffix == ".pop":
        raise ReportFormatError(f"{file}: not a Poplar profile (profile.pop files are SQLite databases; truncated or corrupt?)")
    if file.suffix == ".cbor":
        raise ReportFormatError(f"{file}: Poplar debug information, not a profile; open the profile.pop next to it")
    if header.lstrip()[:1] in (b"{", b"["):
        raise ReportFormatError(f"{file}: a JSON file, not a report")
    raise ReportFormatError(f"{file}: not a report (unrecognised content; expected profile.sqlite or profile.pop)")


def _table_names(file: pathlib.Path) -> frozenset[str]:
    uri = read_only_uri(file)
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            names = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise ReportFormatError(f"{file}: corrupt SQLite database ({exc})") from None
    return frozenset(names)


def _find_debug(profile: pathlib.Path, root: pathlib.Path) -> pathlib.Path | None:
    """debug.cbor beside the profile, else in a parent up to ``root`` (PopTorch puts it there)."""
    directory = profile.parent.resolve()
    stop = root.resolve()
    while True:
        candidate = directory / DEBUG_FILENAME
        if candidate.is_file():
            return candidate
        if directory == stop or directory.parent == directory or stop not in directory.parents:
            return None
        directory = directory.parent


def _read_poplar(file: pathlib.Path, root: pathlib.Path, *, code: bool = True, progress: Progress | None = None) -> Report:
    from profcompare.readers.pva import read_pva

    return read_pva(file, _find_debug(file, root), code=code, progress=progress)


def _apply_run(report: Report, run: Mapping[str, Any], path: pathlib.Path) -> Report:
    """The report with workload, variant, config, layout and samples_per_step taken from ``run.json``.

    Every value is checked like the report's own (a ReportFormatError naming ``path``): a
    run description cannot smuggle in what a report could not hold.
    """
    changes: dict[str, Any] = {}
    for key in ("workload", "variant"):
        value = run.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise ReportFormatError(f"{path}: {key} must be a string, got {type(value).__name__}")
            changes[key] = value
    config = run.get("config")
    if config is not None:
        if not isinstance(config, dict):
            raise ReportFormatError(f"{path}: config must be an object, got {type(config).__name__}")
        changes["config"] = config
    layout = run.get("layout")
    if layout is not None:
        if not isinstance(layout, dict):
            raise ReportFormatError(f"{path}: layout must be an object, got {type(layout).__name__}")
        changes["layout"] = layout
    samples = run.get("samples_per_step")
    if samples is not None:
        if isinstance(samples, bool) or not isinstance(samples, int):
            raise ReportFormatError(f"{path}: samples_per_step must be a positive integer, got {samples!r}")
        changes["samples_per_step"] = samples
    generation = run.get("addons_generation")
    if generation is not None:
        if not isinstance(generation, str):
            raise ReportFormatError(f"{path}: addons_generation must be a string, got {type(generation).__name__}")
        changes["addons_generation"] = generation
    if run.get("status") == "oom":
        changes["oom"] = True
    try:
        return report.with_meta(report.meta.replace(**changes))
    except ReportValidationError as exc:
        raise ReportFormatError(f"{path}: {exc}") from None

__all__ = ["REPORT_FILENAMES", "open_report", "open_report_meta"]
