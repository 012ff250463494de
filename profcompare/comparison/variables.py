"""The ``variables`` table of a comparison: pairing the variables of two reports (by
attribution, exact name, then normalised name) and :func:`normalise_variable_name`."""

from __future__ import annotations

import re
from typing import cast

import numpy as np
import pandas as pd

from profcompare.comparison.join import (
    _MATCH_DTYPE,
    _align_keys,
    _order_abs_delta_then_label,
    _pick_categorical,
    _take,
    _take_boolean,
    _take_object,
    _value_columns,
)
from profcompare.model import Report


# --------------------------------------------------------------------------------------------
# Variable name normalisation

_SCOPE_PREFIX = re.compile(
    r"^(?:(?:main|main_graph|load_remote|store_remote|remote_load|remote_store"
    r"|<[^<>/]*>|[^/]*subgraph[^/]*|graph_?\d+)/)+"
)
_REPLICA_OR_NUMERIC_SUFFIX = re.compile(
    r"(?:__t\d+|_\d+|\.\d+|/shard\d*|__?shard(?:ed)?\d*|__?rts|_remote_loaded)+$"
)


def normalise_variable_name(name: str) -> str:
    """The name used to pair variables that were renamed between two reports.

    Strips, from the start, scope prefixes (``main/``, ``main_graph/``, ``load_remote/``,
    ``store_remote/``, ``remote_load/``, ``remote_store/``, graph scopes such as ``<graph>/``,
    ``Net_subgraph(0)/``, ``graph_3/``), and from the end numeric suffixes (``__t3``, ``_1``,
    ``.0``) and replica/shard markers (``/shard``, ``/shard0``, ``_rts``, ``__shard0``,
    ``_sharded``, ``_remote_loaded``), repeatedly. A name reduced to nothing stays as it was.
    """
    stripped = _REPLICA_OR_NUMERIC_SUFFIX.sub("", _SCOPE_PREFIX.sub("", name))
    return stripped or name


def _normalise_names(names: np.ndarray) -> np.ndarray:
    """Vectorised :func:`normalise_variable_name` over an object array of names."""
    if not len(names):
        return np.zeros(0, dtype=object)
    series = pd.Series(names, dtype=object)
    stripped = series.str.replace(_SCOPE_PREFIX, "", regex=True).str.replace(
        _REPLICA_OR_NUMERIC_SUFFIX, "", regex=True
    )
    stripped = stripped.where(stripped.str.len() > 0, series)
    return cast(np.ndarray, stripped.to_numpy(dtype=object))



# --------------------------------------------------------------------------------------------
# Pairing rows across reports


#: A graph scope with popxl's per-graph index, ``Adam_subgraph(2)/``: the index depends on the
#: order graphs were created in, so two reports' ``(2)`` need not be the same graph.
_GRAPH_INDEX = re.compile(r"\(\d+\)(?=(?:_[A-Za-z]\w*)?/)")
#: The per-call-instance suffix of simulated reports (``name@2``) and the repeat suffix (``#2``).
_INSTANCE_SUFFIX = re.compile(r"(?:@\d+|#\d+)+$")


def _graph_stems(names: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Names without graph indices and instance suffixes: ``Adam_subgraph(2)/var@3`` ->
    ``Adam_subgraph/var`` (the attributed match key's name part), for the ``rows`` (mask) only;
    "" elsewhere. Only names holding ``(``, ``@`` or ``#`` go through the regular expressions."""
    stems = np.full(len(names), "", dtype=object)
    if not len(names):
        return stems
    stems[rows] = names[rows]
    marked = rows & np.fromiter((isinstance(n, str) and ("(" in n or "@" in n or "#" in n) for n in names),
                                dtype=bool, count=len(names))
    if marked.any():
        series = pd.Series(names[marked], dtype=object)
        stems[marked] = series.str.replace(_GRAPH_INDEX, "", regex=True).str.replace(
            _INSTANCE_SUFFIX, "", regex=True).to_numpy(dtype=object)
    return stems


def _has_graph_index(names: np.ndarray) -> np.ndarray:
    """Mask of the names with a graph index (``Adam_subgraph(2)/``); only names holding ``(``
    go through the regular expression."""
    mask = np.fromiter((isinstance(n, str) and "(" in n for n in names), dtype=bool, count=len(names))
    if mask.any():
        mask[mask] = pd.Series(names[mask], dtype=object).str.contains(_GRAPH_INDEX).to_numpy(dtype=bool)
    return mask


def _without_graph_index(names: np.ndarray) -> np.ndarray:
    """Names without popxl's graph indices, instance suffixes kept: ``Net_subgraph(0)/x@2`` ->
    ``Net_subgraph/x@2``."""
    stripped = pd.Series(names, dtype=object).str.replace(_GRAPH_INDEX, "", regex=True)
    return cast(np.ndarray, stripped.to_numpy(dtype=object))


def _codes(base_values: np.ndarray, new_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer codes of two arrays over their common values (vectorised)."""
    codes, uniques = pd.factorize(pd.Series(np.r_[base_values, new_values], dtype=object), use_na_sentinel=False)
    codes = codes.astype(np.int64)
    return codes[: len(base_values)], codes[len(base_values):], max(1, len(uniques))


def _combine(*parts: tuple[np.ndarray, np.ndarray, int]) -> tuple[np.ndarray, np.ndarray]:
    """One int64 key per row from several coded columns (mixed radix)."""
    base_key = np.zeros(len(parts[0][0]), dtype=np.int64)
    new_key = np.zeros(len(parts[0][1]), dtype=np.int64)
    for b, n, size in parts:
        base_key = base_key * size + b
        new_key = new_key * size + n
    return base_key, new_key


def _pair(base_key: np.ndarray, new_key: np.ndarray, base_free: np.ndarray, new_free: np.ndarray,
          base_partner: np.ndarray, new_partner: np.ndarray, match: np.ndarray, code: int, *,
          unique_only: bool) -> None:
    """Pair the free rows (mask) with equal keys: the k-th occurrence in base with the k-th in new
    (``unique_only``: only keys that occur once among each side's free rows). In place."""
    bi_rows = np.flatnonzero(base_free)
    ni_rows = np.flatnonzero(new_free)
    if not len(bi_rows) or not len(ni_rows):
        return
    bk, nk = base_key[bi_rows], new_key[ni_rows]
    if unique_only:
        codes, uniques = pd.factorize(np.r_[bk, nk])
        b_codes, n_codes = codes[: len(bk)], codes[len(bk):]
        once = (np.bincount(b_codes, minlength=len(uniques)) == 1) & (np.bincount(n_codes, minlength=len(uniques)) == 1)
        keep_b, keep_n = once[b_codes], once[n_codes]
        bi_rows, ni_rows, bk, nk = bi_rows[keep_b], ni_rows[keep_n], bk[keep_b], nk[keep_n]
        if not len(bi_rows) or not len(ni_rows):
            return
    b_pos, n_pos = _align_keys(bk, nk)
    both = (b_pos >= 0) & (n_pos >= 0)
    b_sel, n_sel = bi_rows[b_pos[both]], ni_rows[n_pos[both]]
    base_partner[b_sel] = n_sel
    new_partner[n_sel] = b_sel
    match[b_sel] = code


def _compare_variables(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    """The per-variable diff (see :mod:`profcompare.comparison`). Rows are paired in three passes,
    each only between rows of the same parameter and role, so a pair never mixes two parameters'
    data:

    1. ``attributed``: rows with a parameter, on the key (parameter, role, name without graph
       indices and instance suffixes), k-th occurrence with k-th; then unattributed rows of
       called graphs on (role, name without graph index, call instance kept), when unique on
       each side;
    2. ``exact``: the same name (k-th with k-th);
    3. ``normalised``: the same normalised name (:func:`normalise_variable_name`), when unique on
       each side.

    A graph-scoped name with popxl's graph index (``Adam_subgraph(2)/var``) is paired only in
    pass 1: the index is creation order, not identity. Linear in the number of rows.
    """
    b, n = base.variables, new.variables
    base_names = b["name"].to_numpy(dtype=object)
    new_names = n["name"].to_numpy(dtype=object)
    base_param = b["parameter"].to_numpy(dtype=object)
    new_param = n["parameter"].to_numpy(dtype=object)
    base_role = b["role"].astype(str).to_numpy(dtype=object)
    new_role = n["role"].astype(str).to_numpy(dtype=object)
    n_base, n_new = len(b), len(n)
    base_partner = np.full(n_base, -1, dtype=np.int64)
    new_partner = np.full(n_new, -1, dtype=np.int64)
    match = np.full(n_base, 3, dtype=np.int8)
    param_codes = _codes(base_param, new_param)
    role_codes = _codes(base_role, new_role)

    base_attr, new_attr = base_param != "", new_param != ""
    if base_attr.any() and new_attr.any():
        stems = _codes(_graph_stems(base_names, base_attr), _graph_stems(new_names, new_attr))
        bk, nk = _combine(param_codes, role_codes, stems)
        _pair(bk, nk, base_attr, new_attr, base_partner, new_partner, match, 0, unique_only=False)

    base_indexed, new_indexed = _has_graph_index(base_names), _has_graph_index(new_names)
    base_loose = (base_partner < 0) & base_indexed & ~base_attr
    new_loose = (new_partner < 0) & new_indexed & ~new_attr
    if base_loose.any() and new_loose.any():
        # unattributed tensors of called graphs (activations, partials): the same role, the same
        # name within the graph and the same call instance, unique on each side
        local_b = np.full(n_base, "", dtype=object)
        local_n = np.full(n_new, "", dtype=object)
        local_b[base_loose] = _without_graph_index(base_names[base_loose])
        local_n[new_loose] = _without_graph_index(new_names[new_loose])
        bk, nk = _combine(role_codes, _codes(local_b, local_n))
        _pair(bk, nk, base_loose, new_loose, base_partner, new_partner, match, 0, unique_only=True)
    bk, nk = _combine(param_codes, role_codes, _codes(base_names, new_names))
    _pair(bk, nk, (base_partner < 0) & ~base_indexed, (new_partner < 0) & ~new_indexed, base_partner, new_partner,
          match, 1, unique_only=False)

    base_free = (base_partner < 0) & ~base_indexed
    new_free = (new_partner < 0) & ~new_indexed
    if base_free.any() and new_free.any():
        normalised_b = np.full(n_base, "", dtype=object)
        normalised_n = np.full(n_new, "", dtype=object)
        normalised_b[base_free] = _normalise_names(base_names[base_free])
        normalised_n[new_free] = _normalise_names(new_names[new_free])
        bk, nk = _combine(param_codes, role_codes, _codes(normalised_b, normalised_n))
        _pair(bk, nk, base_free, new_free, base_partner, new_partner, match, 2, unique_only=True)

    only_new = np.flatnonzero(new_partner < 0)
    bi = np.r_[np.arange(n_base, dtype=np.int64), np.full(len(only_new), -1, dtype=np.int64)]
    ni = np.r_[base_partner, only_new]
    match_codes = np.r_[match, np.full(len(only_new), 3, dtype=np.int8)]

    base_name = _take(base_names, bi, None)
    new_name = _take(new_names, ni, None)
    name = np.where(ni >= 0, new_name, base_name)
    values = _value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64")
    order = _order_abs_delta_then_label(values["delta_bytes"], name)
    frame = pd.DataFrame(
        {
            "name": pd.Series(name, dtype=object),
            "match": pd.Categorical.from_codes(match_codes, dtype=_MATCH_DTYPE),
            "base_name": pd.Series(base_name, dtype=object),
            "new_name": pd.Series(new_name, dtype=object),
            "kind": _pick_categorical(b["kind"], n["kind"], bi, ni),
            **{k: values[k] for k in ("base_bytes", "new_bytes", "delta_bytes", "delta_pct", "status")},
            "base_always_live": _take_boolean(b["always_live"], bi),
            "new_always_live": _take_boolean(n["always_live"], ni),
            "base_shape": _take_object(b["shape"], bi),
            "new_shape": _take_object(n["shape"], ni),
            "dtype": _pick_categorical(b["dtype"], n["dtype"], bi, ni),
            "base_parameter": pd.Series(_take(base_param, bi, None), dtype=object),
            "new_parameter": pd.Series(_take(new_param, ni, None), dtype=object),
            "base_role": pd.Series(_take(base_role, bi, None), dtype=object),
            "new_role": pd.Series(_take(new_role, ni, None), dtype=object),
        }
    )
    return frame.take(order).reset_index(drop=True)
