"""The per-table diffs of a comparison (one outer join each): summary, categories, ledger,
tiles, code, execution and remote buffers. Variables and liveness have modules of their own."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from profcompare.comparison.join import (
    NOT_AVAILABLE,
    _align_keys,
    _delta_pct,
    _order_abs_delta_then_label,
    _take,
    _take_boolean,
    _value_columns,
    noise_threshold,
)
from profcompare.model import (
    CATEGORY_GROUP_NAMES,
    CATEGORY_GROUPS,
    METRIC_UNITS,
    METRICS,
    PHASES,
    Report,
    combined_confidence,
    metric_confidence,
)


# --------------------------------------------------------------------------------------------
# Tables


def _compare_summary(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    base_values = base.summary().to_numpy(dtype="float64")
    new_values = new.summary().to_numpy(dtype="float64")
    delta = new_values - base_values
    status: list[str] = []
    for metric, b, n, d in zip(METRICS, base_values, new_values, delta):
        if math.isnan(b) or math.isnan(n):
            status.append(NOT_AVAILABLE)
            continue
        noise_abs = noise_bytes if METRIC_UNITS[metric] == "bytes" else math.inf
        threshold = float(noise_threshold(b, noise_abs, noise_pct))
        status.append("grew" if d > threshold else "shrank" if d < -threshold else "unchanged")
    frame = pd.DataFrame(
        {
            "unit": pd.Series([METRIC_UNITS[m] for m in METRICS], dtype=object),
            "base": base_values,
            "new": new_values,
            "delta": delta,
            "delta_pct": _delta_pct(base_values, delta),
            "status": pd.Series(status, dtype=object),
            "confidence": pd.Series(
                [combined_confidence(metric_confidence(base.meta, m), metric_confidence(new.meta, m)) for m in METRICS],
                dtype=object,
            ),
        }
    )
    frame.index = pd.Index(list(METRICS), name="metric", dtype=object)
    return frame


def _compare_categories(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b, n = base.categories, new.categories
    bi, ni = _align_keys(b["category"].to_numpy(dtype=object), n["category"].to_numpy(dtype=object))
    category = pd.Series(
        np.where(ni >= 0, _take(n["category"].to_numpy(dtype=object), ni, None), _take(b["category"].to_numpy(dtype=object), bi, None)),
        dtype=object,
    )
    group_values = np.where(
        ni >= 0, _take(n["group"].astype(str).to_numpy(dtype=object), ni, None), _take(b["group"].astype(str).to_numpy(dtype=object), bi, None)
    )
    frame = pd.DataFrame(
        {
            "category": category,
            "group": pd.Categorical(group_values, categories=list(CATEGORY_GROUP_NAMES)),
            **_value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64"),
        }
    )
    known = {c: i for i, c in enumerate(CATEGORY_GROUPS)}
    group_rank = {g: i for i, g in enumerate(CATEGORY_GROUP_NAMES)}
    frame["_g"] = [group_rank.get(g, len(group_rank)) for g in group_values]
    frame["_c"] = [known.get(c, len(known)) for c in category]
    frame = frame.sort_values(["_g", "_c", "category"], kind="mergesort")
    return frame.drop(columns=["_g", "_c"]).reset_index(drop=True)



# --------------------------------------------------------------------------------------------
# Ledger


def _empty_ledger_diff() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in _LEDGER_DIFF_COLUMNS})


_LEDGER_DIFF_COLUMNS: tuple[tuple[str, str], ...] = (
    ("parameter", "object"), ("role", "object"), ("location", "object"),
    ("base_bytes", "int64"), ("new_bytes", "int64"), ("delta_bytes", "int64"), ("delta_pct", "float64"),
    ("status", "category"), ("base_bytes_at_peak", "int64"), ("new_bytes_at_peak", "int64"),
    ("delta_bytes_at_peak", "int64"), ("base_first_step", "Int64"), ("base_last_step", "Int64"),
    ("new_first_step", "Int64"), ("new_last_step", "Int64"),
)


def _compare_ledger(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    """The ledger diff: :func:`profcompare.analysis.ledger.ledger` of both reports outer-joined on
    (parameter, role, location)."""
    b, n = base.ledger(), new.ledger()
    b_key = (b["parameter"] + "\x00" + b["role"] + "\x00" + b["location"]).to_numpy(dtype=object)
    n_key = (n["parameter"] + "\x00" + n["role"] + "\x00" + n["location"]).to_numpy(dtype=object)
    bi, ni = _align_keys(b_key, n_key)

    def pick(column: str) -> pd.Series:
        return pd.Series(np.where(ni >= 0, _take(n[column].to_numpy(dtype=object), ni, None),
                                  _take(b[column].to_numpy(dtype=object), bi, None)), dtype=object)

    def steps(frame: pd.DataFrame, index: np.ndarray, column: str) -> pd.Series:
        values = frame[column].to_numpy(dtype="float64", na_value=np.nan)
        taken = np.full(len(index), np.nan)
        present = index >= 0
        taken[present] = values[index[present]]
        return pd.Series(pd.array([None if v != v else int(v) for v in taken], dtype="Int64"))

    values = _value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64")
    at_peak_base = _take(b["bytes_at_peak"].to_numpy(dtype=np.int64), bi, 0).astype(np.int64)
    at_peak_new = _take(n["bytes_at_peak"].to_numpy(dtype=np.int64), ni, 0).astype(np.int64)
    frame = pd.DataFrame({
        "parameter": pick("parameter"), "role": pick("role"), "location": pick("location"),
        **values,
        "base_bytes_at_peak": at_peak_base, "new_bytes_at_peak": at_peak_new,
        "delta_bytes_at_peak": at_peak_new - at_peak_base,
        "base_first_step": steps(b, bi, "first_step"), "base_last_step": steps(b, bi, "last_step"),
        "new_first_step": steps(n, ni, "first_step"), "new_last_step": steps(n, ni, "last_step"),
    })
    if not len(frame):
        return _empty_ledger_diff()
    from profcompare.analysis.ledger import sort_ledger

    return sort_ledger(frame)


def _compare_tiles(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b, n = base.tiles, new.tiles
    bi, ni = _align_keys(b["tile"].to_numpy(), n["tile"].to_numpy())
    tile = np.where(ni >= 0, _take(n["tile"].to_numpy(), ni, 0), _take(b["tile"].to_numpy(), bi, 0)).astype("int64")
    ipu = np.where(ni >= 0, _take(n["ipu"].to_numpy(), ni, 0), _take(b["ipu"].to_numpy(), bi, 0)).astype("int64")
    frame = pd.DataFrame(
        {
            "tile": tile,
            "ipu": ipu,
            **_value_columns(
                "bytes", b["bytes_including_gaps"].to_numpy(), n["bytes_including_gaps"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64"
            ),
            "base_always_live_bytes": _take(b["always_live_bytes"].to_numpy(dtype="int64"), bi, 0),
            "new_always_live_bytes": _take(n["always_live_bytes"].to_numpy(dtype="int64"), ni, 0),
        }
    )
    return frame.sort_values("tile", kind="mergesort").reset_index(drop=True)


def _code_totals(report: Report) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    code = report.code
    if not len(code):
        return np.zeros(0, dtype=object), np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)
    grouped = code.groupby("name", sort=False).agg(type=("type", "first"), code_bytes=("code_bytes", "sum"))
    return (
        grouped.index.to_numpy(dtype=object),
        grouped["type"].astype(object).to_numpy(dtype=object),
        grouped["code_bytes"].to_numpy(dtype="int64"),
    )


def _compare_code(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b_name, b_type, b_bytes = _code_totals(base)
    n_name, n_type, n_bytes = _code_totals(new)
    bi, ni = _align_keys(b_name, n_name)
    name = np.where(ni >= 0, _take(n_name, ni, None), _take(b_name, bi, None))
    types = np.where(ni >= 0, _take(n_type, ni, None), _take(b_type, bi, None))
    categories = list(dict.fromkeys([*base.code["type"].cat.categories, *new.code["type"].cat.categories]))
    values = _value_columns("code_bytes", b_bytes, n_bytes, bi, ni, noise_bytes, noise_pct, "int64")
    frame = pd.DataFrame(
        {
            "name": pd.Series(name, dtype=object),
            "type": pd.Categorical(types, categories=categories),
            **values,
        }
    )
    return frame.take(_order_abs_delta_then_label(values["delta_code_bytes"], name)).reset_index(drop=True)


def _compare_execution(base: Report, new: Report, noise_pct: float) -> pd.DataFrame:
    from profcompare.analysis.views import execution_by_phase

    b, n = execution_by_phase(base), execution_by_phase(new)
    bi, ni = _align_keys(b["phase"].to_numpy(dtype=object), n["phase"].to_numpy(dtype=object))
    phase = np.where(ni >= 0, _take(n["phase"].to_numpy(dtype=object), ni, None), _take(b["phase"].to_numpy(dtype=object), bi, None))
    frame = pd.DataFrame(
        {
            "phase": pd.Series(phase, dtype=object),
            **_value_columns("cycles", b["cycles"].to_numpy(), n["cycles"].to_numpy(), bi, ni, math.inf, noise_pct, "float64"),
        }
    )
    rank = {p: i for i, p in enumerate(PHASES)}
    frame["_p"] = [rank.get(p, len(rank)) for p in phase]
    return frame.sort_values(["_p", "phase"], kind="mergesort").drop(columns="_p").reset_index(drop=True)


def _compare_remote_buffers(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b, n = base.remote_buffers, new.remote_buffers
    b_name, n_name = b["name"].to_numpy(dtype=object), n["name"].to_numpy(dtype=object)
    bi, ni = _align_keys(b_name, n_name)
    name = np.where(ni >= 0, _take(n_name, ni, None), _take(b_name, bi, None))
    values = _value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64")
    frame = pd.DataFrame(
        {
            "name": pd.Series(name, dtype=object),
            **values,
            "base_entries": _take(b["entries"].to_numpy(dtype="int64"), bi, 0),
            "new_entries": _take(n["entries"].to_numpy(dtype="int64"), ni, 0),
            "base_sharded": _take_boolean(b["sharded"], bi),
            "new_sharded": _take_boolean(n["sharded"], ni),
        }
    )
    return frame.take(_order_abs_delta_then_label(values["delta_bytes"], name)).reset_index(drop=True)
