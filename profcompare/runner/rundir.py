"""Where a run lands: run.json, the hidden staging directory and the atomic publish, clean-up of
what killed runs left behind, and listing runs.

The whole run is written to a hidden staging sibling (``<out>/.<name>.tmp-<pid>-<tag>/``, locked
by its owner for its whole life: see :mod:`profcompare.runner.staging`) and renamed to
``<out>/<name>/`` only when complete, so a run killed mid-way never leaves a directory that looks
complete, and a run whose staging directory was taken away publishes nothing. An existing run is
replaced only with ``force``, and only after the new run completed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from profcompare.errors import (
    OutputExistsError,
)
from profcompare.runner.plan import check_run_name
from profcompare.runner.results import STATUSES
from profcompare.runner.staging import (
    OWNER_LOCK,
    Staging,
    StagingLostError,
    _remove_entry,
    create_staging,
    leftover_staging,
    remove_stale_staging,
)

if TYPE_CHECKING:  # pragma: no cover
    pass


#: ``run.json`` layout version (fields listed in docs/report-format.md).
RUN_SCHEMA_VERSION = 1


RUN_JSON = "run.json"


#: stderr of a job's subprocess (tracebacks, anything the SDK prints) lands here.
RUN_LOG = "run.log"


#: report files a backend writes: Poplar's profile.pop (sdk) or our store file (sim)
REPORT_FILE_NAMES = ("profile.pop", "profile.sqlite")


def find_report_files(directory: Path) -> list[str]:
    """Report files (profile.pop / profile.sqlite) under ``directory``, as sorted relative paths.

    Poplar writes straight into autoReport.directory for popxl, or into one engine-named
    subdirectory for named engines, so the search is recursive; top-level files come first.
    """
    found = [p for p in directory.rglob("*") if p.name in REPORT_FILE_NAMES and p.is_file()]
    rel = [p.relative_to(directory).as_posix() for p in found]
    return sorted(rel, key=lambda r: (r.count("/"), REPORT_FILE_NAMES.index(r.rsplit("/", 1)[-1]), r))


def now_iso() -> str:
    """The current local time, ISO-8601 with UTC offset, millisecond precision."""
    return _dt.datetime.now().astimezone().isoformat(timespec="milliseconds")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` via a temporary file and os.replace."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_run_json(directory: Path) -> dict[str, Any] | None:
    """The parsed ``run.json`` in ``directory``, or None when absent or unreadable."""
    try:
        data = json.loads((directory / RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _prepare_out(out: Path, name: str, force: bool) -> Staging:
    check_run_name(name)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out)
    final = out / name
    if os.path.lexists(final) and not force:
        raise OutputExistsError(f"run directory {final} already exists (use --force to replace it, or --name)")
    return create_staging(out, name)


def _publish(staging: Staging, final: Path, force: bool) -> bool:
    """Rename the complete ``staging`` dir to ``final``, then release it; returns True when an old
    run was replaced. Raises StagingLostError (publishing nothing) when the staging directory is
    no longer the one this run created."""
    staging.check()
    replaced = False
    old: Staging | None = None
    if os.path.lexists(final):  # a file or a (dangling) symlink is in the way too
        if not force:
            raise OutputExistsError(f"run directory {final} already exists (use --force to replace it, or --name)")
        # the replaced run waits in a locked directory of its own: a clean-up never takes it while we work
        old = create_staging(final.parent, final.name, kind="old")
        os.replace(final, old.path / final.name)
        replaced = True
    try:
        os.replace(staging.path, final)
    except BaseException:
        if old is not None:
            os.replace(old.path / final.name, final)
            old.discard()
        raise
    with contextlib.suppress(OSError):
        (final / OWNER_LOCK).unlink()
    staging.release()
    if old is not None:
        _remove_entry(old.path)
        old.release()
    return replaced


def open_staging(out: Path, name: str, force: bool) -> Staging:
    """The locked, hidden staging directory of a run ``<out>/<name>/`` built outside
    ``execute_jobs`` (an advise run holding many batches); OutputExistsError when the run exists
    and not ``force``. Publish it with :func:`publish_staging`, or ``discard()`` it."""
    return _prepare_out(out, name, force)


def publish_staging(staging: Staging, final: Path, force: bool) -> bool:
    """Rename the complete ``staging`` directory to ``final`` (see :func:`open_staging`); returns
    True when an existing run was replaced."""
    return _publish(staging, final, force)


def unique_run_name(out: Path, name: str) -> str:
    candidate, n = name, 2
    while (out / candidate).exists():
        candidate, n = f"{name}-{n}", n + 1
    return candidate


@dataclass(frozen=True)
class RunListing:
    """One run directory under an output root, as ``profcompare runs`` shows it."""

    name: str
    directory: Path
    kind: str  # "run" | "sweep" | "advise"
    jobs: tuple[tuple[str, Mapping[str, Any]], ...]  # (label, run.json) per job, in start order
    backend: str
    started: str | None
    swept: tuple[str, ...] = ()  # the knobs a sweep varies (from sweep.json)

    @property
    def variants(self) -> tuple[str, ...]:
        """The distinct variants of the run, in start order."""
        return tuple(dict.fromkeys(str(info.get("variant", label)) for label, info in self.jobs))

    @property
    def status(self) -> str:
        """ok when every job is ok, else the worst status: failed > unknown > incomplete > oom (see
        :func:`job_status`)."""
        statuses = {job_status(info) for _, info in self.jobs}
        for s in ("failed", "unknown", "incomplete", "oom"):
            if s in statuses:
                return s
        return "ok"


def job_status(info: Mapping[str, Any]) -> str:
    """The status of one job's ``run.json``: ok, oom or failed, and ``unknown`` when the file holds
    anything else (or nothing) there -- a run is ok only when it says so."""
    status = info.get("status")
    return status if isinstance(status, str) and status in STATUSES else "unknown"


def list_runs(out: str | os.PathLike[str] = "reports") -> list[RunListing]:
    """The runs under ``out`` (newest first), read from each job's ``run.json``.

    Hidden directories (staging directories of runs in progress or killed) and directories
    without any ``run.json`` are ignored. Returns [] when ``out`` does not exist.
    """
    root = Path(out)
    if not root.is_dir():
        return []
    listings = []
    for entry in root.iterdir():
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        jobs = []
        for sub in sorted(entry.iterdir()):
            if sub.is_dir() and not sub.name.startswith("."):
                info = read_run_json(sub)
                if info is not None:
                    jobs.append((sub.name, MappingProxyType(info)))
        if not jobs:
            continue
        jobs.sort(key=lambda job: str(job[1].get("started") or ""))  # stable: ties keep name order
        backends = sorted({str(info.get("backend", "?")) for _, info in jobs})
        starts = sorted(str(info["started"]) for _, info in jobs if info.get("started"))
        kind = "run"
        swept: tuple[str, ...] = ()
        if (entry / "advise.json").exists():
            kind = "advise"
        elif (entry / "sweep.json").exists():
            kind = "sweep"
            with contextlib.suppress(OSError, ValueError, TypeError):
                swept = tuple(str(k) for k in json.loads((entry / "sweep.json").read_text(encoding="utf-8"))["swept"])
        listings.append(
            RunListing(entry.name, entry, kind, tuple(jobs), "/".join(backends), starts[0] if starts else None, swept)
        )
    listings.sort(key=lambda r: (r.started or "", r.name), reverse=True)
    return listings


__all__ = ["REPORT_FILE_NAMES", "RUN_JSON", "RUN_LOG", "RUN_SCHEMA_VERSION", "RunListing", "Staging", "StagingLostError", "find_report_files", "job_status", "leftover_staging", "list_runs", "now_iso", "open_staging", "publish_staging", "read_run_json", "remove_stale_staging", "unique_run_name", "write_json_atomic"]
