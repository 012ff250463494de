"""Pure analysis functions over a :class:`~profcompare.model.Report` (no I/O, no plotting).

Every function takes a Report (or a DataFrame) and returns a new DataFrame, a small dict or a
:class:`TopN`; nothing here mutates its input. Byte columns are int64 bytes per replica, like
the Report model; cycles are cycles of the IPU clock (``meta.target.clock_hz``).

Top-N with an "other" row
    Every table shown to a user is cut to its N most important rows by :func:`top_n`, which
    appends one final row aggregating what was cut (label ``"other"``, the ``sum_columns``
    summed, every other column missing) and says how much was cut (``shown``, ``total``,
    ``cut``), so a renderer can write "top 20 of 1,000,000 shown; 999,980 in other".
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from profcompare.errors import ProfcompareError
from profcompare.perf.memo import kept_copy
from profcompare.model import CATEGORY_GROUP_NAMES, DEVICE_PHASES, INSTANCE_SUFFIX, PHASES, Report, text_codes

#: Label of the row that aggregates the rows :func:`top_n` cut.
OTHER_LABEL = "other"

#: Variables columns sorted in ascending (alphabetical / increasing) order by default;
#: every other column sorts in descending order (largest first).
_ASCENDING_BY_DEFAULT = frozenset({"name", "kind", "dtype", "shape", "first_step", "last_step"})


@dataclass(frozen=True, eq=False)
class TopN:
    """The first rows of a table after sorting, plus one "other" row for the rest.

    ``rows`` holds the ``shown`` kept rows (index 0..shown-1) followed, when ``cut > 0``, by one
    final "other" row whose label column is ``"other"``, whose sum columns hold the sums over
    the ``cut`` rows left out and whose other columns are missing (<NA>/NaN; int64 and bool
    columns become the nullable Int64 / boolean dtypes so the missing value fits).
    ``total`` = ``shown`` + ``cut`` is the number of rows considered (after any filter).
    """

    rows: pd.DataFrame
    shown: int
    total: int
    cut: int

    @property
    def has_other(self) -> bool:
        """True when rows were cut, i.e. the last row of :attr:`rows` is the "other" row."""
        return self.cut > 0

    @property
    def shown_rows(self) -> pd.DataFrame:
        """The kept rows without the "other" row."""
        return self.rows.iloc[: self.shown]

    @property
    def other(self) -> pd.Series | None:
        """The "other" row (a Series), or None when nothing was cut."""
        return self.rows.iloc[-1] if self.cut else None

    def note(self, noun: str = "rows") -> str:
        """A one-line description of the cut, e.g. ``top 20 of 1,000,000 rows shown; 999,980 in other``."""
        if not self.cut:
            return f"all {self.total:,} {noun} shown"
        return f"top {self.shown:,} of {self.total:,} {noun} shown; {self.cut:,} in {OTHER_LABEL}"


def _sort_positions(
    frame: pd.DataFrame,
    n: int | None,
    by: str,
    label_column: str,
    ascending: bool,
    key: Callable[[pd.Series], Any] | None,
) -> np.ndarray:
    """Positions of the first ``n`` rows (all when None) in order: ``by`` (after ``key``), then label.

    Missing values of ``by`` sort last whatever the direction. For numeric columns only the
    candidates for the first ``n`` rows are fully sorted (argpartition), so cutting a
    million-row table to 20 rows costs one linear pass.
    """
    values = frame[by]
    if key is not None:
        values = key(values)
    values = pd.Series(values, index=frame.index)
    total = len(frame)
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        numeric = values.to_numpy(dtype="float64", na_value=np.nan)
        ranks = numeric if ascending else -numeric
        ranks = np.where(np.isnan(ranks), np.inf, ranks)
        if n is not None and n < total:
            if n == 0:
                return np.empty(0, dtype=np.intp)
            threshold = np.partition(ranks, n - 1)[n - 1]
            candidates = np.flatnonzero(ranks <= threshold)
        else:
            candidates = np.arange(total)
        nan_last = np.isnan(numeric[candidates])
        order_frame = pd.DataFrame(
            {
                "_nan": nan_last,
                "_rank": ranks[candidates],
                "_label": frame[label_column].to_numpy()[candidates],
            }
        )
        order = order_frame.sort_values(["_nan", "_rank", "_label"], kind="mergesort", na_position="last").index
        positions: np.ndarray = candidates[order.to_numpy()]
    else:
        order_frame = pd.DataFrame(
            {"_value": values.to_numpy(), "_label": frame[label_column].to_numpy()}
        )
        positions = order_frame.sort_values(
            ["_value", "_label"], ascending=[ascending, True], kind="mergesort", na_position="last"
        ).index.to_numpy()
    return positions if n is None else positions[:n]


def top_n(
    frame: pd.DataFrame,
    n: int | None,
    by: str,
    *,
    label_column: str,
    sum_columns: Sequence[str] = (),
    ascending: bool = False,
    key: Callable[[pd.Series], Any] | None = None,
    other_label: str = OTHER_LABEL,
) -> TopN:
    """Sort ``frame`` by ``by`` and keep its first ``n`` rows, aggregating the rest into "other".

    - ``n``: rows to keep (None = all, nothing cut).
    - ``by``: sort column; ``key`` (e.g. ``abs``) is applied to it before sorting; missing values
      sort last. Ties are broken by ``label_column`` (ascending), so the result is deterministic.
    - ``ascending``: False (default) puts the largest first.
    - ``sum_columns``: columns summed over the cut rows into the "other" row.

    Returns a :class:`TopN` whose ``rows`` has ``frame``'s columns (same order) with a fresh
    0..k-1 index; see :class:`TopN` for the "other" row. Raises ProfcompareError for an unknown
    column or a negative ``n``.
    """
    missing = [c for c in (by, label_column, *sum_columns) if c not in frame.columns]
    if missing:
        raise ProfcompareError(f"unknown column(s) {missing}; columns are {list(frame.columns)}")
    if n is not None and n < 0:
        raise ProfcompareError(f"top must be a non-negative number of rows, got {n}")
    total = len(frame)
    positions = _sort_positions(frame, n, by, label_column, ascending, key)
    shown = len(positions)
    cut = total - shown
    rows = frame.iloc[positions].reset_index(drop=True)
    if not cut:
        return TopN(rows=rows, shown=shown, total=total, cut=0)
    kept = np.zeros(total, dtype=bool)
    kept[positions] = True
    rest = frame.iloc[np.flatnonzero(~kept)]
    for column in rows.columns:
        if column in sum_columns or column == label_column:
            continue
        dtype = rows[column].dtype
        if dtype == np.dtype("int64"):
            rows[column] = rows[column].astype("Int64")
        elif dtype == np.dtype("bool"):
            rows[column] = rows[column].astype("boolean")
    label_dtype = rows[label_column].dtype
    if not (label_dtype == np.dtype("O") or pd.api.types.is_string_dtype(label_dtype)) or isinstance(
        label_dtype, pd.CategoricalDtype
    ):
        rows[label_column] = rows[label_column].astype(object)
    other_columns: dict[str, pd.Series] = {}
    for column in rows.columns:
        dtype = rows[column].dtype
        if column == label_column:
            other_columns[column] = pd.Series([other_label], dtype=dtype)
        elif column in sum_columns:
            other_columns[column] = pd.Series([rest[column].sum()]).astype(dtype)
        else:
            other_columns[column] = pd.Series([None], dtype=dtype)
    result = pd.concat([rows, pd.DataFrame(other_columns)], ignore_index=True)
    return TopN(rows=result, shown=shown, total=total, cut=cut)


def category_breakdown(report: Report) -> pd.DataFrame:
    """Memory by category.

    Returns columns: category (str), group (category: code | vertex_data | variables | other),
    bytes (int64, summed over the replica's tiles), pct (float64, percent of the sum over all
    categories; NaN when that sum is 0). Rows are ordered by group (code, vertex_data,
    variables, other), then by bytes descending, then by category name.
    """
    cats = report.categories
    total = float(cats["bytes"].sum())
    group_rank = {g: i for i, g in enumerate(CATEGORY_GROUP_NAMES)}
    out = pd.DataFrame(
        {
            "category": pd.Series(cats["category"].to_numpy(dtype=object), dtype=object),
            "group": pd.Categorical(cats["group"].astype(str), categories=list(CATEGORY_GROUP_NAMES)),
            "bytes": cats["bytes"].to_numpy(dtype="int64"),
        }
    )
    out["pct"] = 100.0 * out["bytes"] / total if total else np.nan
    out["pct"] = out["pct"].astype("float64")
    out["_group_rank"] = out["group"].astype(str).map(group_rank).astype("int64")
    out = out.sort_values(["_group_rank", "bytes", "category"], ascending=[True, False, True], kind="mergesort")
    return out.drop(columns="_group_rank").reset_index(drop=True)


def variables_view(
    report: Report,
    *,
    top: int | None = None,
    sort: str = "bytes",
    filter_regex: str | None = None,
    always_live: bool | None = None,
    ascending: bool | None = None,
) -> TopN:
    """The report's variables, filtered, sorted and cut to ``top`` rows with an "other" row.

    - ``sort``: any variables column (see the Report model); text columns and steps sort
      ascending, sizes descending, unless ``ascending`` says otherwise. Ties: by name.
    - ``filter_regex``: keep names in which the regular expression matches (``re.search``).
    - ``always_live``: True keeps always-live variables only, False not-always-live only,
      None both.

    Returns a :class:`TopN` over the variables columns (name, bytes [int64 bytes], always_live,
    kind, dtype, shape, tiles, first_step, last_step); the "other" row sums ``bytes``;
    ``total`` counts the variables left after filtering. Raises ProfcompareError on an unknown
    sort column or an invalid regular expression.
    """
    variables = report.variables
    if sort not in variables.columns:
        raise ProfcompareError(f"cannot sort variables by {sort!r}; choose one of {', '.join(variables.columns)}")
    if filter_regex is not None:
        # A user's pattern may draw library warnings ("possible nested set", "has match groups"):
        # they say nothing about the result, so they are not printed.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                re.compile(filter_regex)
            except (re.error, RecursionError, OverflowError) as exc:
                raise ProfcompareError(f"invalid filter regular expression {filter_regex!r}: {exc}") from None
            mask = variables["name"].astype(object).str.contains(filter_regex, regex=True, na=False)
        variables = variables.loc[mask.to_numpy(dtype=bool)]
    if always_live is not None:
        variables = variables.loc[variables["always_live"].to_numpy() == bool(always_live)]
    if ascending is None:
        ascending = sort in _ASCENDING_BY_DEFAULT
    return top_n(variables, top, sort, label_column="name", sum_columns=("bytes",), ascending=ascending)


def call_instance_stems(names: pd.Series) -> pd.Series:
    """Each variable name without its call-instance suffix (``grad@3`` -> ``grad``): simulated
    reports list a tensor of a graph called from several sites once per call instance."""
    return names.astype(str).str.replace(INSTANCE_SUFFIX, "", regex=True)


def selection_totals(variables: pd.DataFrame) -> dict[str, int]:
    """What a selection of variables rows adds up to, and why that is not memory in use.

    Returns a dict: rows (int), bytes (int, the plain sum of the rows), tensors (int, rows with
    the call instances ``name@1``..``name@N`` of one tensor counted once), tensor_bytes (int,
    each tensor counted once at its largest instance), instance_rows (int, rows that are call
    instances of a tensor listed more than once), not_always_live_rows (int). The sums overstate
    memory in use: not-always-live rows live over different steps and share addresses.
    """
    if not len(variables):
        return {"rows": 0, "bytes": 0, "tensors": 0, "tensor_bytes": 0, "instance_rows": 0, "not_always_live_rows": 0}
    stems = call_instance_stems(variables["name"])
    nbytes = variables["bytes"].to_numpy(dtype="int64")
    per_tensor = pd.Series(nbytes).groupby(stems.to_numpy()).agg(["max", "size"])
    return {
        "rows": len(variables),
        "bytes": int(nbytes.sum()),
        "tensors": len(per_tensor),
        "tensor_bytes": int(per_tensor["max"].sum()),
        "instance_rows": int(per_tensor.loc[per_tensor["size"] > 1, "size"].sum()),
        "not_always_live_rows": int((~variables["always_live"].to_numpy(dtype=bool)).sum()),
    }


class LivenessPeak(TypedDict):
    """What :func:`liveness_peak` returns (see there)."""

    step: int | None
    program: str | None
    program_type: str | None
    not_always_live_bytes: int
    always_live_bytes: int
    peak_liveness_bytes: int


def liveness_peak(report: Report) -> LivenessPeak:
    """The program step at which not-always-live memory peaks.

    Returns a dict: step (int, or None without liveness), program (str or None), program_type
    (str or None), not_always_live_bytes (int bytes at that step, 0 without liveness),
    always_live_bytes (int, summed over tiles), peak_liveness_bytes (int, always-live +
    not-always-live peak). The first step reaching the maximum is reported.
    """
    live = report.liveness_per_step()
    always = int(report.tiles["always_live_bytes"].sum())
    if not len(live):
        return {
            "step": None,
            "program": None,
            "program_type": None,
            "not_always_live_bytes": 0,
            "always_live_bytes": always,
            "peak_liveness_bytes": always,
        }
    position = int(np.argmax(live["not_always_live_bytes"].to_numpy()))
    row = live.iloc[position]
    peak = int(row["not_always_live_bytes"])
    return {
        "step": int(row["step"]),
        "program": str(row["program"]),
        "program_type": str(row["program_type"]),
        "not_always_live_bytes": peak,
        "always_live_bytes": always,
        "peak_liveness_bytes": always + peak,
    }


def code_by_program(report: Report) -> pd.DataFrame:
    """Code bytes per program/operation, summed over code categories.

    Returns columns: name (str), type (category; the program type of the name's first row),
    code_bytes (int64 bytes, summed over tiles and categories). Sorted by code_bytes
    descending, then name. Computed once per report (a page's table and chart both ask).
    """
    return kept_copy(report, "_memo_code_by_program", lambda: _code_by_program(report))


def _code_by_program(report: Report) -> pd.DataFrame:
    code = report.code
    if not len(code):
        return pd.DataFrame(
            {
                "name": pd.Series([], dtype=object),
                "type": pd.Series([], dtype="category"),
                "code_bytes": pd.Series([], dtype="int64"),
            }
        )
    grouped = code.groupby("name", sort=False, observed=True).agg(
        type=("type", "first"), code_bytes=("code_bytes", "sum")
    )
    out = pd.DataFrame(
        {
            "name": pd.Series(grouped.index.to_numpy(dtype=object), dtype=object),
            "type": pd.Categorical(grouped["type"].astype(object), categories=code["type"].cat.categories),
            "code_bytes": grouped["code_bytes"].to_numpy(dtype="int64"),
        }
    )
    out = out.sort_values(["code_bytes", "name"], ascending=[False, True], kind="mergesort")
    return out.reset_index(drop=True)


def _union_length(starts: np.ndarray, ends: np.ndarray, *, in_order: bool = False) -> float:
    """Total length covered by the intervals [start, end) (overlaps counted once); ``in_order``:
    the intervals are sorted by start already."""
    if not len(starts):
        return 0.0
    if in_order:
        s, e = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    # an interval opens a new covered piece when it starts after everything before it ended
    new_piece = np.concatenate([[True], s[1:] > reach[:-1]])
    piece_start = s[new_piece]
    piece_end = np.maximum.reduceat(e, np.flatnonzero(new_piece))
    return float(np.sum(piece_end - piece_start))


def execution_by_phase(report: Report) -> pd.DataFrame:
    """Cycles per step (one run of the main program) by execution phase.

    Returns columns: phase (str; :data:`profcompare.model.PHASES` order, only phases present
    in the execution profile), cycles (float64 cycles per step, averaged over the profiled
    runs), pct (float64, percent of the device cycles per step -- the span of the device phases;
    NaN when 0, and NaN for the ``runtime`` phase, host/runtime time that is not device time).
    Empty without an execution profile.

    With intervals (``cycles_from``/``cycles_to``) every device cycle of a run's span counts
    once, under one phase, so the device phases add up to the device cycles per step and their
    percentages to 100: a cycle where several phases run (compute on one IPU during a stream
    copy on another, say) counts under the first of them in :data:`DEVICE_PHASES` order, and
    ``sync`` is *waiting*: the cycles of the span no other phase covers (a SyncAns block spans
    the steps it waits for; a gap between blocks is waiting too). Without intervals each phase
    is the sum of its rows' cycles, which is exact for profiles whose steps run one after
    another (the simulator's, where both ways give the same figures). Computed once per report
    (a page's table and chart, the json export and the comparison's table all ask).
    """
    return kept_copy(report, "_memo_execution_by_phase", lambda: _execution_by_phase(report))


def _execution_by_phase(report: Report) -> pd.DataFrame:
    execution = report.execution
    if not len(execution):
        return pd.DataFrame(
            {
                "phase": pd.Series([], dtype=object),
                "cycles": pd.Series([], dtype="float64"),
                "pct": pd.Series([], dtype="float64"),
            }
        )
    runs = max(int(execution["run"].nunique()), 1)
    # the phase of each row as a code into its names (a million rows are not made strings)
    phase_code, phase_names = text_codes(execution["phase"])
    starts = execution["cycles_from"].to_numpy(dtype="float64", na_value=np.nan)
    ends = execution["cycles_to"].to_numpy(dtype="float64", na_value=np.nan)
    if np.isnan(starts).any() or np.isnan(ends).any():
        phase_of_row = np.asarray(phase_names, dtype=object)[phase_code]
        sums = execution.groupby(phase_of_row, sort=False)["cycles"].sum()
        phases = [p for p in PHASES if p in sums.index]
        cycles = np.array([float(sums[p]) / runs for p in phases], dtype="float64")
        total = float(sum(c for p, c in zip(phases, cycles) if p in DEVICE_PHASES))
    else:
        run_of_row = execution["run"].to_numpy()
        present = {phase_names[c] for c in np.unique(phase_code).tolist()}
        phases = [p for p in PHASES if p in present]
        code_of = {name: code for code, name in enumerate(phase_names)}
        totals = dict.fromkeys(phases, 0.0)
        span = 0.0
        for run in np.unique(run_of_row):
            in_run = run_of_row == run
            s, e, ph = starts[in_run], ends[in_run], phase_code[in_run]
            # sorted by start once: every subset below is then in start order already
            order = np.argsort(s, kind="stable")
            s, e, ph = s[order], e[order], ph[order]
            del order, in_run
            device = ph != code_of.get("runtime", -1)
            run_span = float(e[device].max() - s[device].min()) if device.any() else 0.0
            span += run_span
            # each device cycle once, under the first phase busy then; sync (waiting) takes the rest
            earlier = np.zeros(len(ph), dtype=bool)
            covered = 0.0
            for p in (q for q in DEVICE_PHASES if q != "sync" and q in totals):
                earlier |= ph == code_of[p]
                reach = _union_length(s[earlier], e[earlier], in_order=True)
                totals[p] += reach - covered
                covered = reach
            if "runtime" in totals:
                totals["runtime"] += _union_length(s[~device], e[~device], in_order=True)
            if "sync" in totals:
                totals["sync"] += run_span - covered
        cycles = np.array([totals[p] / runs for p in phases], dtype="float64")
        total = span / runs
    pct = 100.0 * cycles / total if total else np.full(len(cycles), np.nan)
    pct = np.where([p in DEVICE_PHASES for p in phases], pct, np.nan)
    return pd.DataFrame({"phase": pd.Series(phases, dtype=object), "cycles": cycles, "pct": pct})


class TileStats(TypedDict):
    """What :func:`tile_stats` returns (see there)."""

    tiles: int
    bytes_per_tile: int
    min_bytes: int
    max_bytes: int
    median_bytes: float
    mean_bytes: float
    tiles_over_budget: int
    worst_tiles: pd.DataFrame


def tile_stats(report: Report, *, worst: int = 10) -> TileStats:
    """Tile memory statistics of one replica (bytes = ``bytes_including_gaps``).

    Returns a dict:
    - tiles (int): number of tiles in the report;
    - bytes_per_tile (int): the target's tile memory budget;
    - min_bytes, max_bytes (int), median_bytes, mean_bytes (float) over tiles (0 without tiles);
    - tiles_over_budget (int): tiles whose bytes exceed bytes_per_tile;
    - worst_tiles (DataFrame): the ``worst`` fullest tiles, columns tile, ipu, bytes,
      always_live_bytes, not_always_live_peak_bytes (int64 bytes), pct_of_budget (float64
      percent of bytes_per_tile); sorted by bytes descending then tile.
    """
    tiles = report.tiles
    budget = int(report.meta.target.bytes_per_tile)
    used = tiles["bytes_including_gaps"]
    worst_frame = pd.DataFrame(
        {
            "tile": tiles["tile"].to_numpy(dtype="int64"),
            "ipu": tiles["ipu"].to_numpy(dtype="int64"),
            "bytes": used.to_numpy(dtype="int64"),
            "always_live_bytes": tiles["always_live_bytes"].to_numpy(dtype="int64"),
            "not_always_live_peak_bytes": tiles["not_always_live_peak_bytes"].to_numpy(dtype="int64"),
        }
    )
    worst_rows = top_n(worst_frame, None, "bytes", label_column="tile").rows.head(max(worst, 0)).copy()
    worst_rows["pct_of_budget"] = (100.0 * worst_rows["bytes"] / budget).astype("float64")
    return {
        "tiles": len(tiles),
        "bytes_per_tile": budget,
        "min_bytes": int(used.min()) if len(tiles) else 0,
        "max_bytes": int(used.max()) if len(tiles) else 0,
        "median_bytes": float(used.median()) if len(tiles) else 0.0,
        "mean_bytes": float(used.mean()) if len(tiles) else 0.0,
        "tiles_over_budget": int((used > budget).sum()),
        "worst_tiles": worst_rows,
    }


#: How many of the largest not-always-live variables :func:`largest_live_variables` scans at
#: most (in chunks, stopping as soon as every asked step has its ``k`` variables).
LIVE_VARIABLES_SCAN_LIMIT = 200_000


def largest_live_variables(report: Report, steps: Sequence[int] | np.ndarray, *, k: int = 3) -> pd.DataFrame:
    """The ``k`` largest not-always-live variables live at each of ``steps``.

    A variable is live at step ``s`` when ``first_step <= s <= last_step`` (the variables
    table's liveness interval; always-live variables have none and are not listed). Returns a
    DataFrame with columns step (int64, one of ``steps``), rank (int64, 1 = largest), name
    (str), bytes (int64 bytes per replica), sorted by step then rank; a step where fewer than
    ``k`` variables are live has fewer rows. Ties in bytes keep the table's order. Only the
    :data:`LIVE_VARIABLES_SCAN_LIMIT` largest variables are considered, which only matters
    when a step's largest live variables are smaller than that many others.
    """
    columns = {"step": "int64", "rank": "int64", "name": object, "bytes": "int64"}
    queries = np.unique(np.asarray(steps, dtype="int64"))
    variables = report.variables
    if k <= 0 or not len(queries) or not len(variables):
        return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in columns.items()})
    first = variables["first_step"].to_numpy(dtype="float64", na_value=np.nan)
    last = variables["last_step"].to_numpy(dtype="float64", na_value=np.nan)
    keep = ~variables["always_live"].to_numpy(dtype=bool) & np.isfinite(first) & np.isfinite(last)
    names = variables["name"].to_numpy(dtype=object)[keep]
    sizes = variables["bytes"].to_numpy(dtype="int64")[keep]
    first, last = first[keep], last[keep]
    order = np.argsort(-sizes, kind="stable")[:LIVE_VARIABLES_SCAN_LIMIT]
    # how many of the scanned variables are live at each step: the scan stops once every step
    # has min(k, that many), so steps where little is live do not make it read every variable
    starts, ends = np.sort(first[order]), np.sort(last[order])
    wanted = np.minimum(
        k, np.searchsorted(starts, queries, side="right") - np.searchsorted(ends, queries, side="left")
    )
    found = np.zeros(len(queries), dtype="int64")
    out_step: list[np.ndarray] = []
    out_rank: list[np.ndarray] = []
    out_index: list[np.ndarray] = []
    chunk = 4096
    for start in range(0, len(order), chunk):
        ids = order[start : start + chunk]
        open_ = found < wanted
        if not open_.any():
            break
        q = queries[open_]
        live = (first[ids][None, :] <= q[:, None]) & (q[:, None] <= last[ids][None, :])
        # rank of each live variable among the live ones of its step, continuing from earlier chunks
        ranks = np.cumsum(live, axis=1) + found[open_][:, None]
        take = live & (ranks <= k)
        rows, cols = np.nonzero(take)
        out_step.append(q[rows])
        out_rank.append(ranks[rows, cols])
        out_index.append(ids[cols])
        found[open_] += take.sum(axis=1)
    if not out_step:
        return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in columns.items()})
    index = np.concatenate(out_index)
    frame = pd.DataFrame(
        {
            "step": np.concatenate(out_step).astype("int64"),
            "rank": np.concatenate(out_rank).astype("int64"),
            "name": pd.Series(names[index].astype(str), dtype=object),
            "bytes": sizes[index].astype("int64"),
        }
    )
    return frame.sort_values(["step", "rank"], kind="stable").reset_index(drop=True)


__all__ = [
    "LIVE_VARIABLES_SCAN_LIMIT",
    "OTHER_LABEL",
    "LivenessPeak",
    "TileStats",
    "TopN",
    "call_instance_stems",
    "category_breakdown",
    "code_by_program",
    "execution_by_phase",
    "largest_live_variables",
    "liveness_peak",
    "selection_totals",
    "tile_stats",
    "top_n",
    "variables_view",
]
