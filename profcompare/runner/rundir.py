"""Where a run lands: run.json, the hidden staging directory and the atomic publish, clean-up of
what killed runs left behind, and listing runs.

The whole run is written to a hidden staging sibling (``<out>/.<name>.tmp-<pid>/``) and renamed
to ``<out>/<name>/`` only when complete, so a run killed mid-way never leaves a directory that
looks complete. An existing run is replaced only with ``force``, and only after the new run
completed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from profcompare.errors import (
    OutputExistsError,
)
from profcompare.runner.plan import check_run_name

if TYPE_CHECKING:  # pragma: no cover
    pass


#: ``run.json`` layout version (fields listed in docs/report-format.md).
RUN_SCHEMA_VERSION = 1


RUN_JSON = "run.json"


#: stderr of a job's subprocess (tracebacks, anything the SDK prints) lands here.
RUN_LOG = "run.log"


#: report files a backend writes: Poplar's profile.pop (sdk) or our store file (sim)
REPORT_FILE_NAMES = ("profile.pop", "profile.sqlite")


_STAGING_RE = re.compile(r"^\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>\d+)$")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftover_staging(out: Path) -> list[Path]:
    """Hidden ``.NAME.tmp-PID`` / ``.NAME.old-PID`` entries in ``out`` whose process is gone.

    They are what a killed run leaves behind (its process can no longer finish or publish them).
    Entries of live processes (runs in progress) are not included.
    """
    if not out.is_dir():
        return []
    found = []
    for entry in out.iterdir():
        match = _STAGING_RE.match(entry.name)
        if match and not _pid_alive(int(match["pid"])):
            found.append(entry)
    return sorted(found)


def _remove_entry(path: Path) -> None:
    """Remove a directory tree, a file or a symlink (never following the link)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def remove_stale_staging(out: Path) -> list[Path]:
    """Delete every leftover of killed runs in ``out`` (see :func:`leftover_staging`); return them.

    Any run name's leftovers go: the process that could have used them is gone.
    """
    removed = leftover_staging(out)
    for entry in removed:
        _remove_entry(entry)
    return removed


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


def _prepare_out(out: Path, name: str, force: bool) -> Path:
    check_run_name(name)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out)
    final = out / name
    if os.path.lexists(final) and not force:
        raise OutputExistsError(f"run directory {final} already exists (use --force to replace it, or --name)")
    staging = out / f".{name}.tmp-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    return staging


def _publish(staging: Path, final: Path, force: bool) -> bool:
    """Rename the complete ``staging`` dir to ``final``; returns True when an old run was replaced."""
    replaced = False
    old: Path | None = None
    if os.path.lexists(final):  # a file or a (dangling) symlink is in the way too
        if not force:
            raise OutputExistsError(f"run directory {final} already exists (use --force to replace it, or --name)")
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        if os.path.lexists(old):
            _remove_entry(old)
        os.replace(final, old)
        replaced = True
    os.replace(staging, final)
    if old is not None:
        _remove_entry(old)
    return replaced


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
    kind: str  # "run" | "sweep"
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
        """ok when every job is ok, else the worst status (failed > oom)."""
        statuses = {str(info.get("status", "failed")) for _, info in self.jobs}
        for s in ("failed", "oom"):
            if s in statuses:
                return s
        return "ok"


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
        if (entry / "sweep.json").exists():
            kind = "sweep"
            with contextlib.suppress(OSError, ValueError, TypeError):
                swept = tuple(str(k) for k in json.loads((entry / "sweep.json").read_text(encoding="utf-8"))["swept"])
        listings.append(
            RunListing(entry.name, entry, kind, tuple(jobs), "/".join(backends), starts[0] if starts else None, swept)
        )
    listings.sort(key=lambda r: (r.started or "", r.name), reverse=True)
    return listings


__all__ = ["REPORT_FILE_NAMES", "RUN_JSON", "RUN_LOG", "RUN_SCHEMA_VERSION", "RunListing", "find_report_files", "leftover_staging", "list_runs", "now_iso", "read_run_json", "remove_stale_staging", "unique_run_name", "write_json_atomic"]
