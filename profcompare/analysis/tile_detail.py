"""One tile explained: its memory by region, liveness and category, what was live at the peak,
and why the fullest tile is the fullest, and a histogram of tile bytes; a comparison's side by
side view is :mod:`profcompare.comparison.tile_detail`.

Pure functions of a :class:`~profcompare.model.Report` (no I/O, no formatting). A tile's "bytes" are
``bytes_including_gaps``, as the Tiles section and ``max_tile_bytes`` count them.

What the Report records and what it does not:

- per tile: the totals, always-live and not-always-live peak bytes, the region columns (<NA>
  when the source does not record them) and, when the reader gives them, one column per memory
  category;
- per variable: its bytes over the replica and how many tiles hold part of it (``tiles``);
- which tiles hold each variable (``variable_tiles``), where the source records it (the
  simulator does; Poplar profiles read through pva and stores before version 9 do not). Then a
  tile's detail lists the variables on that tile at the tile's own peak step -- the step at which
  the not-always-live variables placed on it hold the most bytes -- with their bytes on the tile,
  always-live ones included. Otherwise it lists the variables live at the replica's
  not-always-live peak step (the liveness table), each with its tile count: the candidates for
  the tile's peak, never a claim that they sit on that tile (:attr:`TileDetail.placement_recorded`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd

from profcompare.errors import ProfcompareError
from profcompare.model import CATEGORY_GROUPS, PLACEMENT_MARK, Report

#: The regions of a tile, in the order tables list them: (key, tiles column).
REGIONS: tuple[tuple[str, str], ...] = (
    ("non_interleaved", "non_interleaved_bytes"),
    ("interleaved", "interleaved_bytes"),
    ("overflow", "overflow_bytes"),
    ("gap", "gap_bytes"),
)

#: How many bins :func:`tile_histogram` cuts the tile bytes into by default.
HISTOGRAM_BINS = 10


class TileDetailError(ProfcompareError):
    """A tile detail that cannot be given: a report without per-tile memory, or a tile number
    outside the report's tiles."""


def _empty_live_variables() -> pd.DataFrame:
    return pd.DataFrame({"name": pd.Series([], dtype=object), "bytes": pd.Series([], dtype="int64"),
                         "kind": pd.Series([], dtype=object), "tiles": pd.Series([], dtype="int64"),
                         "bytes_on_tile": pd.Series([], dtype="Int64")})


def placement_recorded(report: Report, tile: int | None = None) -> bool:
    """Whether ``report`` says which tiles hold each variable (a non-empty ``variable_tiles``):
    on ``tile`` when given, else on any tile. A table with marking rows
    (:data:`~profcompare.model.PLACEMENT_MARK`) covers only the tiles they mark (a large simulated
    program records its fullest tiles only); one without covers every tile."""
    if not len(report.variable_tiles):
        return False
    covered = partial_placement(report)
    return not covered or tile is None or int(tile) in covered


def partial_placement(report: Report) -> tuple[int, ...]:
    """The tiles ``variable_tiles`` covers when it covers only some (its marking rows), in
    order; () when it covers every tile or none."""
    placed = report.variable_tiles
    if not len(placed):
        return ()
    marks = placed["variable"].astype(str).to_numpy(dtype=object) == PLACEMENT_MARK
    return tuple(sorted(int(t) for t in placed["first_tile"].to_numpy(dtype="int64")[marks]))


def variables_on_tile(report: Report, tile: int) -> pd.DataFrame:
    """The variables with bytes on ``tile`` (from ``variable_tiles``): columns name, kind (str),
    bytes (int64, over the replica), tiles (int64), bytes_on_tile (int64, on this tile),
    always_live (bool), first_step, last_step (Int64; <NA> for always-live), in the variables
    table's order. Empty when the report does not record the placement."""
    placed = report.variable_tiles
    columns = ["name", "kind", "bytes", "tiles", "bytes_on_tile", "always_live", "first_step", "last_step"]
    if not len(placed):
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in columns})
    first = placed["first_tile"].to_numpy(dtype="int64")
    last = placed["last_tile"].to_numpy(dtype="int64")
    hit = placed[(first <= tile) & (last >= tile)]
    on_tile = hit.groupby("variable", sort=False)["bytes_per_tile"].sum()
    variables = report.variables
    keep = variables["name"].isin(on_tile.index).to_numpy()
    chosen = variables[keep]
    names = chosen["name"].astype(str).to_numpy(dtype=object)
    return pd.DataFrame({
        "name": pd.Series(names, dtype=object),
        "kind": pd.Series(chosen["kind"].astype(str).to_numpy(dtype=object), dtype=object),
        "bytes": chosen["bytes"].to_numpy(dtype="int64"),
        "tiles": chosen["tiles"].to_numpy(dtype="int64"),
        "bytes_on_tile": on_tile.reindex(names).to_numpy(dtype="int64"),
        "always_live": chosen["always_live"].to_numpy(dtype=bool),
        "first_step": chosen["first_step"].to_numpy(dtype="float64", na_value=np.nan),
        "last_step": chosen["last_step"].to_numpy(dtype="float64", na_value=np.nan),
    }).astype({"first_step": "Int64", "last_step": "Int64"})


def tile_peak_step(on_tile: pd.DataFrame) -> tuple[int | None, int]:
    """(step, bytes): the first step at which the not-always-live variables of ``on_tile``
    (:func:`variables_on_tile`) hold the most bytes on the tile; (None, 0) without any."""
    live = on_tile[~on_tile["always_live"].to_numpy(dtype=bool)]
    if not len(live):
        return None, 0
    first = live["first_step"].to_numpy(dtype="float64", na_value=np.nan)
    last = live["last_step"].to_numpy(dtype="float64", na_value=np.nan)
    size = live["bytes_on_tile"].to_numpy(dtype="int64")
    known = ~np.isnan(first) & ~np.isnan(last)
    if not known.any():
        return None, 0
    first, last, size = first[known], last[known], size[known]
    # the most bytes are live at some variable's first step: one candidate per distinct first
    # step; what is live there = what began at or before it minus what ended before it (sorted
    # sums, O(n log n) in the variables rather than steps x variables)
    steps = np.unique(first)
    by_first = np.argsort(first, kind="stable")
    by_last = np.argsort(last, kind="stable")
    began = np.r_[0, np.cumsum(size[by_first])][np.searchsorted(first[by_first], steps, side="right")]
    ended = np.r_[0, np.cumsum(size[by_last])][np.searchsorted(last[by_last], steps, side="left")]
    held = began - ended
    best = int(np.argmax(held))
    return int(steps[best]), int(held[best])


def _variables_at_tile_peak(on_tile: pd.DataFrame, step: int | None) -> pd.DataFrame:
    """The variables of ``on_tile`` on the tile at ``step`` (always-live ones at every step),
    most bytes on the tile first, then by name: the columns of :func:`live_variables_at`."""
    first = on_tile["first_step"].to_numpy(dtype="float64", na_value=np.nan)
    last = on_tile["last_step"].to_numpy(dtype="float64", na_value=np.nan)
    always = on_tile["always_live"].to_numpy(dtype=bool)
    live = always | ((first <= step) & (last >= step) if step is not None else np.zeros(len(on_tile), dtype=bool))
    chosen = on_tile[live]
    frame = pd.DataFrame({
        "name": pd.Series(chosen["name"].to_numpy(dtype=object), dtype=object),
        "bytes": chosen["bytes"].to_numpy(dtype="int64"),
        "kind": pd.Series(chosen["kind"].to_numpy(dtype=object), dtype=object),
        "tiles": chosen["tiles"].to_numpy(dtype="int64"),
        "bytes_on_tile": pd.array(chosen["bytes_on_tile"].to_numpy(dtype="int64"), dtype="Int64"),
    })
    return frame.sort_values(["bytes_on_tile", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class TileDetail:
    """Everything a report records about one tile of one replica.

    Bytes are int64 byte counts; ``regions`` maps each key of :data:`REGIONS` to its bytes, None
    where the report does not record it (the gaps are always known: bytes including minus
    excluding gaps). ``categories`` holds the tile's bytes per memory
    category (largest first), empty when the report has no per-tile categories. ``peak_step`` /
    ``peak_program`` are, when the report records which tiles hold each variable
    (``placement_recorded``), the tile's own peak step (:func:`tile_peak_step`; the replica's when
    no not-always-live variable is on the tile) and its program; otherwise the replica's
    not-always-live peak step (None / "" without a liveness table). ``live_variables`` (columns
    name, kind: str; bytes: int64 bytes over the replica; tiles: int64 tiles holding part of it;
    bytes_on_tile: Int64 bytes on this tile, <NA> without placement) lists, with placement, the
    variables on the tile at its peak step (always-live ones included), most bytes on the tile
    first; without, the not-always-live variables live at the replica's peak step, largest
    first. ``median_bytes`` is the median tile of the report and ``bytes_per_tile`` its budget.
    """

    tile: int
    ipu: int
    bytes: int
    bytes_excluding_gaps: int
    always_live_bytes: int
    not_always_live_peak_bytes: int
    bytes_per_tile: int
    median_bytes: float
    regions: Mapping[str, int | None]
    categories: Mapping[str, int]
    peak_step: int | None
    peak_program: str
    live_variables: pd.DataFrame = field(default_factory=_empty_live_variables, compare=False)
    #: whether the report says which tiles hold each variable (the simulator's reports do)
    placement_recorded: bool = False
    #: whether ``peak_step`` is the tile's own peak (else the replica's)
    tile_peak: bool = False

    @property
    def over_budget(self) -> bool:
        """True when the tile's bytes exceed the budget."""
        return self.bytes > self.bytes_per_tile

    @property
    def pct_of_budget(self) -> float:
        """The tile's bytes in percent of the budget (NaN for a zero budget)."""
        return 100.0 * self.bytes / self.bytes_per_tile if self.bytes_per_tile else float("nan")

    @property
    def times_median(self) -> float:
        """The tile's bytes over the median tile's (NaN when the median is 0)."""
        return self.bytes / self.median_bytes if self.median_bytes else float("nan")


def _check_tiles(report: Report) -> pd.DataFrame:
    tiles = report.tiles
    if not len(tiles):
        raise TileDetailError(f"{report.label} records no per-tile memory")
    return tiles


def fullest_tile(report: Report) -> int:
    """The tile with the most bytes (including gaps; the lowest tile number on a tie).
    Raises :class:`TileDetailError` for a report without tiles."""
    tiles = _check_tiles(report)
    used = tiles["bytes_including_gaps"].to_numpy(dtype="int64")
    return int(tiles["tile"].to_numpy(dtype="int64")[int(np.argmax(used))])


def peak_step(report: Report) -> tuple[int | None, str]:
    """The replica's not-always-live peak step and its program: the first step of the largest
    ``not_always_live_bytes`` of the liveness table; (None, "") without one."""
    liveness = report.liveness_per_step()
    if not len(liveness):
        return None, ""
    row = liveness.iloc[int(np.argmax(liveness["not_always_live_bytes"].to_numpy(dtype="int64")))]
    return int(row["step"]), str(row["program"])


def live_variables_at(report: Report, step: int | None) -> pd.DataFrame:
    """The not-always-live variables live at ``step`` (``first_step <= step <= last_step``),
    largest first then by name: columns name, kind (str), bytes, tiles (int64), bytes_on_tile
    (Int64, <NA>: which tiles hold them is not used here). Empty for None."""
    variables = report.variables
    if step is None or not len(variables):
        return _empty_live_variables()
    first = variables["first_step"].to_numpy(dtype="float64", na_value=np.nan)
    last = variables["last_step"].to_numpy(dtype="float64", na_value=np.nan)
    live = variables[(~variables["always_live"].to_numpy(dtype=bool)) & (first <= step) & (last >= step)]
    frame = pd.DataFrame({
        "name": pd.Series(live["name"].astype(str).to_numpy(dtype=object), dtype=object),
        "bytes": live["bytes"].to_numpy(dtype="int64"),
        "kind": pd.Series(live["kind"].astype(str).to_numpy(dtype=object), dtype=object),
        "tiles": live["tiles"].to_numpy(dtype="int64"),
        "bytes_on_tile": pd.array([pd.NA] * len(live), dtype="Int64"),
    })
    return frame.sort_values(["bytes", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _optional(value: object) -> int | None:
    return None if pd.isna(value) else int(value)  # type: ignore[call-overload]


def tile_detail(report: Report, tile: int | None = None) -> TileDetail:
    """The :class:`TileDetail` of ``tile`` (None: the fullest tile). Raises
    :class:`TileDetailError` for a report without tiles or a tile it does not have.

    Worked out once per report and tile, and kept on the report (a comparison's page asks for
    each side's fullest tile in three sections; the detail is frozen, its ``live_variables``
    read only)."""
    kept: dict[int | None, TileDetail] | None = report.__dict__.get("_memo_tile_detail")
    if kept is None:
        kept = {}
        object.__setattr__(report, "_memo_tile_detail", kept)  # frozen dataclass: set around its __setattr__
    if tile not in kept:
        kept[tile] = _tile_detail(report, tile)
    return kept[tile]


def _tile_detail(report: Report, tile: int | None) -> TileDetail:
    """:func:`tile_detail`, worked out."""
    tiles = _check_tiles(report)
    if tile is None:
        tile = fullest_tile(report)
    numbers = tiles["tile"].to_numpy(dtype="int64")
    where = np.flatnonzero(numbers == tile)
    if not len(where):
        raise TileDetailError(
            f"tile {tile} is not in {report.label}: its tiles are {int(numbers.min())} to {int(numbers.max())}")
    row = tiles.iloc[int(where[0])]
    regions = {key: _optional(row[column]) for key, column in REGIONS}
    if regions["gap"] is None:  # the gaps follow from the two totals whoever wrote the report
        regions["gap"] = int(row["bytes_including_gaps"]) - int(row["bytes_excluding_gaps"])
    present = [c for c in tiles.columns if c in CATEGORY_GROUPS]
    categories = sorted(((c, int(row[c])) for c in present), key=lambda item: (-item[1], item[0]))
    step, program = peak_step(report)
    placed = placement_recorded(report, int(tile))
    own = None
    if placed:
        on_tile = variables_on_tile(report, int(tile))
        own, _ = tile_peak_step(on_tile)
        if own is not None:
            step, program = own, _program_at(report, own)
        live = _variables_at_tile_peak(on_tile, step)
    else:
        live = live_variables_at(report, step)
    return TileDetail(
        tile=int(tile),
        ipu=int(row["ipu"]),
        bytes=int(row["bytes_including_gaps"]),
        bytes_excluding_gaps=int(row["bytes_excluding_gaps"]),
        always_live_bytes=int(row["always_live_bytes"]),
        not_always_live_peak_bytes=int(row["not_always_live_peak_bytes"]),
        bytes_per_tile=int(report.meta.target.bytes_per_tile),
        median_bytes=float(tiles["bytes_including_gaps"].median()),
        regions=MappingProxyType(regions),
        categories=MappingProxyType(dict(categories)),
        peak_step=step,
        peak_program=program,
        live_variables=live,
        placement_recorded=placed,
        tile_peak=own is not None,
    )


def _program_at(report: Report, step: int) -> str:
    """The program of ``step`` in the liveness table ("" when the table does not have it)."""
    liveness = report.liveness
    hit = liveness[liveness["step"].to_numpy(dtype="int64") == step]
    return str(hit["program"].iloc[0]) if len(hit) else ""


def tile_detail_frame(report: Report, tile: int | None = None) -> pd.DataFrame:
    """One tile's figures as a DataFrame (``report.tile_detail()`` in a notebook): the tile
    ``tile`` (None: the fullest tile), one row per figure. Columns: tile (int64), figure (str:
    bytes, bytes_excluding_gaps, always_live_bytes, not_always_live_peak_bytes, the tiles region
    columns, then its memory categories largest first), bytes (Int64 bytes, <NA> where the report
    does not record the figure). Raises :class:`TileDetailError` as :func:`tile_detail` does."""
    detail = tile_detail(report, tile)
    figures: list[tuple[str, int | None]] = [
        ("bytes", detail.bytes),
        ("bytes_excluding_gaps", detail.bytes_excluding_gaps),
        ("always_live_bytes", detail.always_live_bytes),
        ("not_always_live_peak_bytes", detail.not_always_live_peak_bytes),
        *((column, detail.regions[key]) for key, column in REGIONS),
        *detail.categories.items(),
    ]
    return pd.DataFrame({
        "tile": pd.Series([detail.tile] * len(figures), dtype="int64"),
        "figure": pd.Series([name for name, _ in figures], dtype=object),
        "bytes": pd.array([value for _, value in figures], dtype="Int64"),
    })


def register_report_methods() -> None:
    """Make :func:`tile_detail_frame` the body of ``Report.tile_detail()`` (the model looks it up
    in :mod:`profcompare.base.presenters`)."""
    from profcompare.base import presenters

    presenters.register("Report.tile_detail", tile_detail_frame)


def _kib(value: float) -> str:
    """Bytes in KiB with one decimal (the sentence's own unit, so that it reads the same in
    every output), or exact bytes below 1 KiB."""
    return f"{value:,.0f} B" if abs(value) < 1024 else f"{value / 1024:,.1f} KiB"


def why_fullest(report: Report) -> str:
    """One sentence saying why the fullest tile is the fullest, from the figures: its bytes
    (with its gaps when they are the largest part of them) and how many times the median tile it
    holds, then the part -- not-always-live peak, always-live memory or gaps -- that exceeds the
    median tile's most (ties in that order), with, for not-always-live memory, the replica's peak
    step, and for always-live memory the tile's largest category when recorded; over budget, by
    how much. Raises :class:`TileDetailError` for a report without tiles."""
    detail = tile_detail(report)
    tiles = report.tiles
    gap = int(detail.regions["gap"] or 0)
    medians = {
        "not_always_live": float(tiles["not_always_live_peak_bytes"].median()),
        "always_live": float(tiles["always_live_bytes"].median()),
        "gap": float((tiles["bytes_including_gaps"] - tiles["bytes_excluding_gaps"]).median()),
    }
    held = {"not_always_live": detail.not_always_live_peak_bytes, "always_live": detail.always_live_bytes,
            "gap": gap}
    part = max(held, key=lambda k: held[k] - medians[k])  # the first of the largest on a tie
    head = f"tile {detail.tile} is the fullest: {_kib(detail.bytes)}"
    if part != "gap" and gap > max(detail.always_live_bytes, detail.not_always_live_peak_bytes):
        head += f" ({_kib(gap)} of it gaps)"
    if detail.median_bytes:
        head += f", {detail.times_median:.1f}x the median tile ({_kib(detail.median_bytes)})"
    if part == "not_always_live":
        reason = (f"it holds {_kib(held[part])} of not-always-live memory at its peak "
                  f"against a median of {_kib(medians[part])}")
        if detail.peak_step is not None and detail.tile_peak:
            reason += (f"; the variables placed on it peak at step {detail.peak_step}"
                       f" ({detail.peak_program})")
        elif detail.peak_step is not None:
            reason += (f"; the replica's not-always-live memory peaks at step {detail.peak_step}"
                       f" ({detail.peak_program})")
    elif part == "always_live":
        reason = f"it holds {_kib(held[part])} of always-live memory against a median of {_kib(medians[part])}"
        largest = next(iter(detail.categories), None)
        if largest is not None:
            reason += f"; its largest category is {largest} ({_kib(detail.categories[largest])})"
    else:
        reason = (f"{_kib(gap)} of it are gaps (address space its data spans but does not use) against a median "
                  f"of {_kib(medians[part])}")
    sentence = f"{head}; {reason}"
    if detail.over_budget:
        sentence += f"; it is {_kib(detail.bytes - detail.bytes_per_tile)} over its {_kib(detail.bytes_per_tile)} budget"
    return sentence + "."


def tile_histogram(base: Report, new: Report | None = None, bins: int = HISTOGRAM_BINS) -> pd.DataFrame:
    """How many tiles hold how many bytes (including gaps): ``bins`` bins of equal integer width
    from 0 to the largest tile of either report, each [from, to) except the last, which holds
    its upper edge. Columns from_bytes, to_bytes (int64 bytes), base_tiles (int64) and, with
    ``new``, new_tiles and delta_tiles (int64). Empty (those columns) when no report has tiles."""
    sides = [("base", base)] + ([("new", new)] if new is not None else [])
    values = {name: r.tiles["bytes_including_gaps"].to_numpy(dtype="int64") for name, r in sides}
    columns = ["from_bytes", "to_bytes", *(f"{name}_tiles" for name, _ in sides)]
    if new is not None:
        columns.append("delta_tiles")
    top = max((int(v.max()) for v in values.values() if len(v)), default=0)
    if bins <= 0 or not any(len(v) for v in values.values()):
        return pd.DataFrame({c: pd.Series([], dtype="int64") for c in columns})
    width = max(1, -(-top // bins)) if top else 1
    edges = np.arange(bins + 1, dtype=np.int64) * width
    frame = pd.DataFrame({"from_bytes": edges[:-1], "to_bytes": edges[1:]})
    for name, v in values.items():
        index = np.minimum(v // width, bins - 1)
        frame[f"{name}_tiles"] = np.bincount(index, minlength=bins).astype("int64")
    if new is not None:
        frame["delta_tiles"] = frame["new_tiles"] - frame["base_tiles"]
    return frame[columns]


__all__ = [
    "HISTOGRAM_BINS",
    "REGIONS",
    "TileDetail",
    "TileDetailError",
    "fullest_tile",
    "live_variables_at",
    "peak_step",
    "partial_placement",
    "placement_recorded",
    "tile_detail",
    "tile_histogram",
    "tile_peak_step",
    "variables_on_tile",
    "why_fullest",
]
