"""Lifetimes: each (parameter, role) of the memory ledger as the span of program steps its tile
memory is live over, base beside new.

A pure function of a comparison's ledger diff (:func:`profcompare.comparison.tables._compare_ledger`
builds it) and each report's number of steps; no I/O, no plotting. What it answers at a glance:
optimizer state live over the whole run in one layout and only around the update in the other.

- A group with always-live bytes in a report is live over every step of that report (steps
  0..n-1) and is flagged ``always_live``: its bar spans the run whatever its not-always-live rows do.
- Otherwise its span is the ledger's not-always-live ``first_step``..``last_step`` (<NA> when the
  report holds none of it in tile memory, or does not record steps).
- Streaming Memory is off chip and has no steps: it is not part of a lifetime.

Steps are each report's own program steps (the two programs may differ in length).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.analysis.ledger import TILE_LOCATIONS

#: Columns of :func:`lifetimes`, in order.
LIFETIME_COLUMNS: tuple[str, ...] = (
    "parameter", "role", "base_bytes", "new_bytes", "base_first_step", "base_last_step", "base_always_live",
    "new_first_step", "new_last_step", "new_always_live", "folded",
)

#: How many (parameter, role) rows the views draw before folding the rest into one.
LIFETIME_ROWS = 24


def _side(ledger_diff: pd.DataFrame, codes: np.ndarray, groups: int, side: str,
          steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, first, last, always_live) per group of one side; first/last -1 when unknown."""
    nbytes = ledger_diff[f"{side}_bytes"].to_numpy(dtype="int64")
    location = ledger_diff["location"].to_numpy(dtype=object)
    total = np.bincount(codes, weights=nbytes.astype("float64"), minlength=groups).astype("int64")
    always = np.zeros(groups, dtype=bool)
    always[codes[(location == "always_live") & (nbytes > 0)]] = True
    first = np.full(groups, -1, dtype="int64")
    last = np.full(groups, -1, dtype="int64")
    nal = (location == "not_always_live") & (nbytes > 0)
    f = ledger_diff[f"{side}_first_step"].to_numpy(dtype="int64", na_value=-1)
    la = ledger_diff[f"{side}_last_step"].to_numpy(dtype="int64", na_value=-1)
    known = nal & (f >= 0) & (la >= 0)
    first[codes[known]] = f[known]
    last[codes[known]] = la[known]
    if steps > 0:
        first[always] = 0
        last[always] = steps - 1
    return total, first, last, always


def _nullable(values: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """Int64 steps, <NA> where ``values`` is -1 (unknown)."""
    out = pd.array(np.asarray(values, dtype="int64"), dtype="Int64")
    out[np.asarray(values) < 0] = pd.NA
    return out


def lifetimes(ledger_diff: pd.DataFrame, base_steps: int, new_steps: int, n: int | None = LIFETIME_ROWS) -> pd.DataFrame:
    """Each (parameter, role)'s live span in tile memory, base and new, largest first.

    ``ledger_diff`` is a comparison's ledger (``Comparison.ledger``); ``base_steps`` /
    ``new_steps`` each report's number of program steps. Columns (:data:`LIFETIME_COLUMNS`):
    parameter, role (str); base_bytes, new_bytes (int64: always-live + not-always-live bytes of
    the group, per replica); base_/new_first_step, _last_step (Int64: the span, <NA> when the
    report holds none of the group in tile memory or records no steps); base_/new_always_live
    (bool: live over the whole run); folded (bool). Rows are ordered by the larger of the two
    bytes, then parameter and role; past ``n`` rows (None: all) the rest are folded into one
    row, parameter ``"other (K groups)"``, role "", bytes summed, the span from the earliest
    first to the latest last step, always_live when any is. Groups with no tile memory on
    either side are left out.
    """
    tile = ledger_diff[ledger_diff["location"].isin(TILE_LOCATIONS).to_numpy()]
    keys = pd.MultiIndex.from_arrays([tile["parameter"].astype(str).to_numpy(dtype=object),
                                      tile["role"].astype(str).to_numpy(dtype=object)])
    codes, uniques = pd.factorize(keys)
    groups = len(uniques)
    codes = np.asarray(codes, dtype="int64")
    base = _side(tile, codes, groups, "base", base_steps)
    new = _side(tile, codes, groups, "new", new_steps)
    parameter = np.asarray(uniques.get_level_values(0), dtype=object) if groups else np.zeros(0, dtype=object)
    role = np.asarray(uniques.get_level_values(1), dtype=object) if groups else np.zeros(0, dtype=object)
    keep = (base[0] > 0) | (new[0] > 0)
    size = np.maximum(base[0], new[0])
    order = np.lexsort((role.astype(str), parameter.astype(str), -size))
    order = order[keep[order]]
    cut = order[n:] if n is not None else order[:0]
    order = order[:n] if n is not None else order
    frame = pd.DataFrame({
        "parameter": pd.Series(parameter[order], dtype=object),
        "role": pd.Series(role[order], dtype=object),
        "base_bytes": base[0][order], "new_bytes": new[0][order],
        "base_first_step": _nullable(base[1][order]), "base_last_step": _nullable(base[2][order]),
        "base_always_live": base[3][order],
        "new_first_step": _nullable(new[1][order]), "new_last_step": _nullable(new[2][order]),
        "new_always_live": new[3][order],
        "folded": np.zeros(len(order), dtype=bool),
    })
    if len(cut):
        def span(side: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> tuple[int, int]:
            firsts, lasts = side[1][cut], side[2][cut]
            known = firsts >= 0
            return (int(firsts[known].min()), int(lasts[known].max())) if known.any() else (-1, -1)

        (bf, bl), (nf, nl) = span(base), span(new)
        other = pd.DataFrame({
            "parameter": pd.Series([f"other ({len(cut):,} groups)"], dtype=object),
            "role": pd.Series([""], dtype=object),
            "base_bytes": [int(base[0][cut].sum())], "new_bytes": [int(new[0][cut].sum())],
            "base_first_step": _nullable(np.array([bf])), "base_last_step": _nullable(np.array([bl])),
            "base_always_live": [bool(base[3][cut].any())],
            "new_first_step": _nullable(np.array([nf])), "new_last_step": _nullable(np.array([nl])),
            "new_always_live": [bool(new[3][cut].any())],
            "folded": [True],
        })
        frame = pd.concat([frame, other], ignore_index=True)
    return frame.reset_index(drop=True)


__all__ = ["LIFETIME_COLUMNS", "LIFETIME_ROWS", "lifetimes"]
