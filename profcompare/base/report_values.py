"""Value rules of the report model: what a well-formed report's numbers must satisfy.

:mod:`profcompare.model` checks a table's columns and dtypes; this module checks its values.
Both run when a :class:`~profcompare.model.Report` is built, so every reader (our store, pva,
the simulator) and every consumer gets the same guarantee: a report that opens is not
nonsense. A violation raises :class:`~profcompare.errors.ReportValidationError` naming the
table, the column and the first bad row, e.g.
``tiles.bytes_excluding_gaps: row 17 has -1 (must be >= 0)``.

The rules, and why:

* every integer column (bytes, cycles, steps, counts, indices) lies in ``0 .. 2**53``:
  negative figures have no meaning, and beyond 2**53 a float64 summary could no longer
  represent the value exactly;
* ``tiles``: ``bytes_excluding_gaps <= bytes_including_gaps`` (gaps only add), tile indices
  unique and below ``target.tiles_per_replica``, IPU indices below ``target.ipus_per_replica``;
* ``first_step <= last_step`` wherever both are given; ``cycles_from <= cycles_to`` in the
  execution table when it has those columns;
* ``categories``: one row per category; ``liveness``: one row per step;
* the target's counts are plain positive integers (a bool is not a count) within the bounds of
  :data:`TARGET_LIMITS`, the clock is finite and positive, and ``num_ipus`` holds all replicas'
  IPUs (``num_ipus >= num_replicas x ipus_per_replica``; popxl rounds up to a power of two);
* every text column (names, kinds, dtypes, shapes, parameters, roles, program names, code
  names, categories, ...) holds a string in every row: a missing value or bytes would pass
  through every table operation and break the first sort, join or render that meets it;
* text fields of the metadata are strings, flags are bools, ``samples_per_step`` is a positive
  integer, and ``config`` is a JSON-like mapping of bounded depth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from profcompare.errors import ReportValidationError

#: The largest integer a report may hold (float64 represents every integer up to it exactly).
MAX_INTEGER = 2**53

#: Upper bounds of the target's counts. Generous for any IPU system built (a Pod256 has 256
#: IPUs; Mk2 IPUs have 1,472 tiles of 624 KiB), tight enough that a corrupt value is refused
#: before anything allocates per-tile or per-IPU arrays from it.
TARGET_LIMITS: Mapping[str, int] = {
    "num_ipus": 65_536,
    "tiles_per_ipu": 65_536,
    "bytes_per_tile": 2**32,
    "num_replicas": 65_536,
    "ipus_per_replica": 4_096,
}
#: Upper bound of a clock in Hz (Mk1 1.6 GHz, Mk2 1.33, Bow 1.85): beyond it a value is corrupt.
MAX_CLOCK_HZ = 1e11
#: Deepest nesting accepted in ``meta.config`` (run configurations are flat mappings of knobs).
MAX_CONFIG_DEPTH = 32


def _fail(message: str) -> None:
    raise ReportValidationError(message)


def _first_bad_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def check_integer_columns(table: str, frame: pd.DataFrame) -> None:
    """Every integer column of ``frame`` lies in ``0 .. MAX_INTEGER`` (nulls allowed)."""
    for column in frame.columns:
        series = frame[column]
        dtype = series.dtype
        if str(dtype) == "Int64":
            values = series.to_numpy(dtype="int64", na_value=0)
        elif dtype == np.dtype("int64"):
            values = series.to_numpy()
        else:
            continue
        if not len(values):
            continue
        low, high = values.min(), values.max()
        if low < 0:
            row = _first_bad_row(values < 0)
            _fail(f"{table}.{column}: row {row} has {int(values[row])} (must be >= 0)")
        if high > MAX_INTEGER:
            row = _first_bad_row(values > MAX_INTEGER)
            _fail(f"{table}.{column}: row {row} has {int(values[row])} (must be <= 2**53)")


def _kind_of(value: Any) -> str:
    """What a value that should have been text is, without showing it (it may be hostile)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "missing"
    return type(value).__name__


def check_text_column(table: str, column: str, series: pd.Series, *, by_row: bool = False) -> None:
    """Every row of ``series`` holds a ``str``; for a categorical, every category is a ``str``
    and every row has one. Raises naming the table, the column and the first bad row (for a
    categorical, the bad category, unless ``by_row``: a text column held as codes, whose rows
    are named as those of a column of text)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories = series.cat.categories
        codes = series.cat.codes.to_numpy()
        not_text = [i for i, v in enumerate(categories) if not isinstance(v, str)] if len(categories) and \
            pd.api.types.infer_dtype(categories, skipna=False) != "string" else []
        if by_row and len(codes):
            wrong = (codes < 0) | np.isin(codes, not_text)
            if wrong.any():
                row = _first_bad_row(wrong)
                what = "missing" if codes[row] < 0 else _kind_of(categories[codes[row]])
                _fail(f"{table}.{column}: row {row} is {what}, not text")
        if not_text:
            _fail(f"{table}.{column}: a category is {_kind_of(categories[not_text[0]])}, not text")
        if len(codes) and codes.min() < 0:
            _fail(f"{table}.{column}: row {_first_bad_row(codes < 0)} is missing, not text")
        return
    if not len(series):
        return
    kind = pd.api.types.infer_dtype(series, skipna=False)
    # pandas' own string dtype reports "string" with missing values in it: those are looked for
    missing = series.isna().to_numpy() if kind == "string" and series.dtype != np.dtype("O") else None
    if kind == "string" and (missing is None or not missing.any()):
        return
    values = series.to_numpy(dtype=object)
    row = next(i for i, v in enumerate(values) if not isinstance(v, str) or (missing is not None and missing[i]))
    _fail(f"{table}.{column}: row {row} is {_kind_of(values[row])}, not text")


def check_unique(table: str, frame: pd.DataFrame, column: str) -> None:
    """``frame[column]`` holds no value twice."""
    duplicated = frame[column].duplicated().to_numpy()
    if duplicated.any():
        row = _first_bad_row(duplicated)
        value = frame[column].iloc[row]
        shown = int(value) if isinstance(value, (int, np.integer)) else repr(str(value))
        _fail(f"{table}.{column}: row {row} repeats {shown} (one row each)")


def check_unique_pairs(table: str, frame: pd.DataFrame, first: str, second: str) -> None:
    """``frame`` holds no (``first``, ``second``) pair twice (<NA> in ``second`` counts as a value)."""
    a = frame[first].to_numpy(dtype="int64")
    b = frame[second].to_numpy(dtype="int64", na_value=-1) if len(frame) else np.zeros(0, np.int64)
    # rows in strictly increasing (first, second) order hold no pair twice: no hashing needed
    if bool(np.all((a[1:] > a[:-1]) | ((a[1:] == a[:-1]) & (b[1:] > b[:-1])))):
        return
    duplicated = frame.duplicated([first, second]).to_numpy()
    if duplicated.any():
        row = _first_bad_row(duplicated)
        value, other = frame[first].iloc[row], frame[second].iloc[row]
        shown = "<NA>" if pd.isna(other) else int(other)
        _fail(f"{table}: row {row} repeats {first} {int(value)} with {second} {shown} (one row each)")


def check_ordered(table: str, frame: pd.DataFrame, low: str, high: str) -> None:
    """``frame[low] <= frame[high]`` wherever both are given."""
    if low not in frame.columns or high not in frame.columns or not len(frame):
        return
    a = frame[low].to_numpy(dtype="float64", na_value=np.nan)
    b = frame[high].to_numpy(dtype="float64", na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = a > b
    if bad.any():
        row = _first_bad_row(bad)
        _fail(f"{table}: row {row} has {low} {int(a[row])} > {high} {int(b[row])}")


def check_program_tree(frame: pd.DataFrame) -> None:
    """Program rows form a tree in tree order: ids unique, each parent an earlier row's id, each
    depth its parent's + 1 (0 for a root)."""
    if not len(frame):
        return
    check_unique("programs", frame, "id")
    ids = frame["id"].to_numpy()
    parents = frame["parent"].to_numpy(dtype="int64", na_value=-1)
    depths = frame["depth"].to_numpy()
    depth_of: dict[int, int] = {}
    for row, (pid, parent, depth) in enumerate(zip(ids.tolist(), parents.tolist(), depths.tolist())):
        if parent < 0:
            expected = 0
        elif parent not in depth_of:
            _fail(f"programs.parent: row {row} has {parent}, not the id of an earlier row")
        else:
            expected = depth_of[parent] + 1
        if depth != expected:
            _fail(f"programs.depth: row {row} has {depth}, expected {expected}")
        depth_of[pid] = depth


def check_tiles(frame: pd.DataFrame, tiles_per_replica: int, ipus_per_replica: int) -> None:
    """Tile rows: gaps only add, indices unique and inside the replica."""
    if not len(frame):
        return
    check_ordered("tiles", frame, "bytes_excluding_gaps", "bytes_including_gaps")
    check_unique("tiles", frame, "tile")
    for column, bound in (("tile", tiles_per_replica), ("ipu", ipus_per_replica)):
        values = frame[column].to_numpy()
        if values.max() >= bound:
            row = _first_bad_row(values >= bound)
            _fail(f"tiles.{column}: row {row} has {int(values[row])} (the target has {bound} per replica)")


def check_target(target: Any) -> None:
    """The target's counts are bounded positive integers and its clock is a real clock."""
    for name, limit in TARGET_LIMITS.items():
        value = getattr(target, name)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            _fail(f"target.{name} must be a positive integer, got {value!r}")
        if not 1 <= value <= limit:
            _fail(f"target.{name} must be between 1 and {limit}, got {value!r}")
    clock = target.clock_hz
    if isinstance(clock, (bool, np.bool_)) or not isinstance(clock, (int, float, np.integer, np.floating)):
        _fail(f"target.clock_hz must be a number, got {clock!r}")
    if not math.isfinite(clock) or not 0 < clock <= MAX_CLOCK_HZ:
        _fail(f"target.clock_hz must be a finite positive clock up to {MAX_CLOCK_HZ:g} Hz, got {clock!r}")
    if not isinstance(target.architecture, str):
        _fail(f"target.architecture must be a string, got {target.architecture!r}")
    needed = target.num_replicas * target.ipus_per_replica
    if target.num_ipus < needed:
        _fail(
            f"target.num_ipus is {target.num_ipus}, fewer than num_replicas x ipus_per_replica = "
            f"{target.num_replicas} x {target.ipus_per_replica}"
        )


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON-like value, stopping (without recursion) once past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
    return deepest


#: the integer fields of one entry of ``meta.replication["replica_groupings"]``, with their least values
REPLICA_GROUPING_FIELDS = {"stride": 1, "group_size": 1, "num_groups": 1, "collectives": 0, "cycles": 0}


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_replication(replication: Any) -> None:
    """``meta.replication``: known keys only, non-negative integers (model.ReportMeta)."""
    unknown = set(replication) - {"io_tiles_per_ipu", "replica_groupings"}
    if unknown:
        _fail(f"meta.replication: unknown keys {sorted(map(str, unknown))}")
    io_tiles = replication.get("io_tiles_per_ipu", 0)
    if not _is_int(io_tiles) or not 0 <= io_tiles <= MAX_INTEGER:
        _fail(f"meta.replication.io_tiles_per_ipu must be a non-negative integer, got {io_tiles!r}")
    groupings = replication.get("replica_groupings", ())
    if not isinstance(groupings, (list, tuple)):
        _fail("meta.replication.replica_groupings must be a list")
    for entry in groupings:
        if not isinstance(entry, Mapping) or set(entry) != set(REPLICA_GROUPING_FIELDS):
            _fail(f"meta.replication.replica_groupings entries need exactly {sorted(REPLICA_GROUPING_FIELDS)}")
        for name, least in REPLICA_GROUPING_FIELDS.items():
            value = entry[name]
            if not _is_int(value) or not least <= value <= MAX_INTEGER:
                _fail(f"meta.replication.replica_groupings.{name} must be an integer >= {least}, got {value!r}")


def check_meta(meta: Any) -> None:
    """Types of the metadata fields, ``samples_per_step`` and the depth of ``config``."""
    for name in ("source", "producer"):
        if not isinstance(getattr(meta, name), str):
            _fail(f"meta.{name} must be a string, got {getattr(meta, name)!r}")
    for name in ("workload", "variant", "created", "addons_generation"):
        value = getattr(meta, name)
        if value is not None and not isinstance(value, str):
            _fail(f"meta.{name} must be a string, got {value!r}")
    for name in ("simulated", "oom"):
        if not isinstance(getattr(meta, name), (bool, np.bool_)):
            _fail(f"meta.{name} must be true or false, got {getattr(meta, name)!r}")
    if meta.execution not in ("numeric", "compile-only"):
        _fail(f"meta.execution must be 'numeric' or 'compile-only', got {meta.execution!r}")
    samples = meta.samples_per_step
    if samples is not None:
        if isinstance(samples, (bool, np.bool_)) or not isinstance(samples, (int, np.integer)):
            _fail(f"meta.samples_per_step must be a positive integer, got {samples!r}")
        if not 1 <= samples <= MAX_INTEGER:
            _fail(f"meta.samples_per_step must be between 1 and 2**53, got {samples!r}")
    _check_replication(getattr(meta, "replication", {}))
    for key, value in getattr(meta, "layout", {}).items():
        if not isinstance(key, str):
            _fail("meta.layout keys must be strings")
        if not isinstance(value, (bool, np.bool_, int, np.integer, float, str)):
            _fail(f"meta.layout.{key} must be a boolean, number or string, got {value!r}")
    if any(not isinstance(k, str) for k in meta.config):
        _fail("meta.config keys must be strings")
    if _depth(dict(meta.config), MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH:
        _fail(f"meta.config is nested deeper than {MAX_CONFIG_DEPTH} levels")


def _check_variable_tiles(placed: Any, tiles: int) -> None:
    """Each run of ``variable_tiles`` inside the replica's tiles, first before last, bytes >= 0."""
    first = placed["first_tile"].to_numpy()
    last = placed["last_tile"].to_numpy()
    bad = (first < 0) | (last < first) | (last >= tiles) | (placed["bytes_per_tile"].to_numpy() < 0)
    if bad.any():
        row = _first_bad_row(bad)
        _fail(f"variable_tiles: row {row} runs from tile {int(first[row])} to {int(last[row])} with "
              f"{int(placed['bytes_per_tile'].to_numpy()[row])} B per tile (the replica has {tiles} tiles)")


def check_report_values(report: Any) -> None:
    """Apply every value rule of this module to ``report`` (raises ReportValidationError)."""
    meta = report.meta
    check_meta(meta)
    check_target(meta.target)
    for table in TABLE_ORDER:
        check_integer_columns(table, getattr(report, table))
    for table in TABLE_ORDER:
        check_table_rules(table, getattr(report, table), meta.target)


#: the tables the rules apply to, in the order :func:`check_report_values` checks them
TABLE_ORDER: tuple[str, ...] = ("tiles", "categories", "variables", "liveness", "code", "execution", "remote_buffers",
                                "trace", "programs", "operations", "variable_tiles", "vertices", "compute_sets",
                                "exchanges")


def check_table_values(table: str, frame: pd.DataFrame, target: Any) -> None:
    """The value rules of one table (its integer columns, then :func:`check_table_rules`): what
    :func:`check_report_values` checks of that table, for a table read on its own (the rules of
    one table never read another)."""
    check_integer_columns(table, frame)
    check_table_rules(table, frame, target)


def check_table_rules(table: str, frame: pd.DataFrame, target: Any) -> None:
    """The rules of ``table`` beyond its integer columns' range, against the report's ``target``."""
    ipus_per_replica = target.ipus_per_replica
    tiles = target.tiles_per_ipu * target.ipus_per_replica
    if table == "tiles":
        check_tiles(frame, tiles, ipus_per_replica)
    elif table == "categories" and len(frame):
        check_unique("categories", frame, "category")
    elif table == "liveness" and len(frame):
        check_unique_pairs("liveness", frame, "step", "ipu")
    elif table in ("variables", "execution", "trace"):
        check_ordered(table, frame, *(("first_step", "last_step") if table == "variables" else ("cycles_from", "cycles_to")))
    if table in ("programs", "operations", "compute_sets", "exchanges") and len(frame):
        if table == "programs":
            check_program_tree(frame)
        ipu = frame["ipu"].to_numpy(dtype="int64", na_value=0)
        if ipu.max() >= ipus_per_replica:
            row = _first_bad_row(ipu >= ipus_per_replica)
            _fail(f"{table}.ipu: row {row} has {int(ipu[row])} (the target has {ipus_per_replica} per replica)")
    if table in ("operations", "vertices", "compute_sets", "exchanges") and len(frame):
        check_text_column(table, "name", frame["name"])
    if table == "variable_tiles" and len(frame):
        _check_variable_tiles(frame, tiles)
    if table == "trace" and len(frame):
        ipus = frame["ipu"].to_numpy()
        if ipus.min() < 0 or ipus.max() >= ipus_per_replica:
            row = _first_bad_row((ipus < 0) | (ipus >= ipus_per_replica))
            _fail(f"trace.ipu: row {row} has {int(ipus[row])} (the target has {ipus_per_replica} per replica)")


__all__ = [
    "MAX_CLOCK_HZ",
    "MAX_CONFIG_DEPTH",
    "MAX_INTEGER",
    "TARGET_LIMITS",
    "check_integer_columns",
    "check_meta",
    "check_ordered",
    "check_program_tree",
    "check_report_values",
    "check_table_rules",
    "check_table_values",
    "TABLE_ORDER",
    "check_target",
    "check_text_column",
    "check_tiles",
    "check_unique",
]
