"""The point cache of ``profcompare advise``: a point already run by an earlier advise run in the
same output root, with the same full config, is reused instead of run again.

A point's key is the sha256 of the canonical JSON of everything its report depends on: the
workload, the variant, the full resolved knob config, the execution mode, the backend, the
popxl-addons generation the simulator emulates and the profcompare version. Each advise run
keeps an index of its points (``advise-cache.json``: key -> point directory); a later run looks
its keys up in every index under the output root and links the points it finds into its own
directory (hard links where the file system allows, else copies), so every advise run stays
complete on its own. An index entry also keeps the point's status and summary figures, so a
reused point's report is not read again (they follow from the report, and the key pins
everything the report depends on).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the index file each advise run keeps
CACHE_INDEX = "advise-cache.json"
CACHE_SCHEMA_VERSION = 1
#: statuses worth reusing: a failed point may have failed for a reason of the moment (killed)
REUSABLE_STATUSES = ("ok", "oom")


def point_key(workload: str, variant: str, config: Mapping[str, Any], *, execution: str, backend: str,
              addons_generation: str, version: str) -> str:
    """The sha256 (hex) of the canonical JSON of a point's full identity."""
    identity = {
        "workload": workload,
        "variant": variant,
        "config": dict(config),
        "execution": execution,
        "backend": backend,
        "addons_generation": addons_generation,
        "profcompare_version": version,
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedPoint:
    """A reusable point of an earlier advise run: its directory, and its status and figures when
    the index recorded them (None: read them from the report)."""

    directory: Path
    status: str
    metrics: Mapping[str, float] | None


def index_entry(label: str, status: str, metrics: Mapping[str, float]) -> dict[str, Any]:
    """One entry of the index: the point's directory name, status and figures (NaN as null)."""
    return {"dir": label, "status": status,
            "metrics": {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}}


def index_document(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The ``advise-cache.json`` document of a run: key -> :func:`index_entry`."""
    return {"schema_version": CACHE_SCHEMA_VERSION, "entries": dict(sorted(entries.items()))}


def _entry_metrics(entry: Mapping[str, Any], status: str) -> Mapping[str, float] | None:
    """The recorded figures of an entry, when complete and recorded with the run's status."""
    from profcompare.analysis.advise_results import POINT_METRICS

    metrics = entry.get("metrics")
    if entry.get("status") != status or not isinstance(metrics, dict) or set(metrics) != set(POINT_METRICS):
        return None
    values: dict[str, float] = {}
    for name, value in metrics.items():
        if value is None:
            values[name] = math.nan
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            values[name] = float(value)
        else:
            return None
    return values


def find_cached(out: Path, keys: Iterable[str]) -> dict[str, CachedPoint]:
    """Reusable runs of each of ``keys`` under ``out`` (key -> CachedPoint).

    Reads every ``<out>/<run>/advise-cache.json`` (newest run first; hidden directories, which
    are runs in progress, are skipped) and keeps a point only when its run.json says ok or oom
    and names report files that exist.
    """
    from profcompare.runner import read_run_json

    wanted = set(keys)
    found: dict[str, CachedPoint] = {}
    if not wanted or not out.is_dir():
        return found
    indexes = []
    for entry in out.iterdir():
        index = entry / CACHE_INDEX
        if entry.name.startswith("."):
            continue
        with contextlib.suppress(OSError):
            if index.is_file():
                indexes.append((index.stat().st_mtime, entry, index))
    for _, entry, index in sorted(indexes, reverse=True):
        try:
            document = json.loads(index.read_text(encoding="utf-8"))
            entries = document["entries"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not isinstance(entries, dict):
            continue
        for key, item in entries.items():
            if key not in wanted or key in found or not isinstance(item, dict):
                continue
            label = item.get("dir")
            if not isinstance(label, str) or not label or "/" in label or label.startswith("."):
                continue
            directory = entry / label
            info = read_run_json(directory)
            status = info.get("status") if info is not None else None
            if info is None or status not in REUSABLE_STATUSES:
                continue
            files = info.get("report_files") or []
            if files and all((directory / str(f)).is_file() for f in files):
                found[key] = CachedPoint(directory, str(status), _entry_metrics(item, str(status)))
    return found


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def link_point(source: Path, target: Path) -> None:
    """Make ``target`` a copy of the point directory ``source`` (files hard-linked when possible;
    files are only ever replaced, never rewritten in place, so the runs cannot affect each other)."""
    shutil.copytree(source, target, copy_function=_link_or_copy, symlinks=True)


__all__ = ["CACHE_INDEX", "CACHE_SCHEMA_VERSION", "REUSABLE_STATUSES", "CachedPoint", "find_cached", "index_document",
           "index_entry", "link_point", "point_key"]
