"""Comparing two reports: ``compare(base, new) -> Comparison`` (delta = new - base).

Every table is an outer join of the two reports on a key, the missing side filled with 0,
with fixed ``base_*`` / ``new_*`` / ``delta_*`` columns, ``delta_pct`` (100 * delta / base;
NaN when base is 0) and ``status`` in {added, removed, grew, shrank, unchanged}. A change is
``unchanged`` only when it is noise by both measures: at most ``noise_bytes`` (byte columns) and
at most ``noise_pct`` percent of base, so a large relative change (9 B -> 25 B, +177.8%) or a
large absolute one is never called unchanged.
Which report is which lives in ``Comparison.base.meta`` / ``Comparison.new.meta``, never in
column names.

Tables (columns, in order):

``summary`` -- index: metric (profcompare.model.METRICS)
    unit, base, new, delta, delta_pct (float64), status
``categories`` -- category, group, base_bytes, new_bytes, delta_bytes, delta_pct, status
``variables`` -- name, match (exact | normalised | unmatched), base_name, new_name, kind,
    base_bytes, new_bytes, delta_bytes, delta_pct, status, base_always_live, new_always_live,
    base_shape, new_shape, dtype; sorted by |delta_bytes| descending, then name
``tiles`` -- tile, ipu, base_bytes, new_bytes, delta_bytes, delta_pct, status,
    base_always_live_bytes, new_always_live_bytes (bytes = bytes_including_gaps)
``code`` -- name, type, base_code_bytes, new_code_bytes, delta_code_bytes, delta_pct, status
    (summed over code categories per program/operation name)
``liveness`` -- the two curves kept as two aligned series: position (int64, 0..n-1), program,
    base_step, new_step (Int64, <NA> where that side has no step at this position),
    base_not_always_live_bytes, new_not_always_live_bytes (Int64, <NA> likewise)
``execution`` -- phase, base_cycles, new_cycles, delta_cycles, delta_pct, status
    (cycles per step, i.e. per run of the main program)
``remote_buffers`` -- name, base_bytes, new_bytes, delta_bytes, delta_pct, status, base_entries,
    new_entries, base_sharded, new_sharded
``programs`` -- the two program trees aligned, in tree order: depth, kind, name, op, base_name,
    new_name, base_id, new_id, base_programs, new_programs, delta_programs (programs in the
    subtree), status in :data:`~profcompare.comparison.programs.PROGRAM_STATUSES` (added,
    removed, changed: a subtree whose programs differ, unchanged); paired by the path of (kind,
    normalised name) from the root (:func:`~profcompare.comparison.programs.compare_programs`)
``operations`` -- one row per op of either report: name, type, base_code_bytes, new_code_bytes,
    delta_code_bytes, base_cycles, new_cycles, delta_cycles (Int64, <NA> where a side does not
    record cycles), status; paired by name, then by normalised name
    (:func:`~profcompare.comparison.operations.compare_operations`)
``vertices``, ``compute_sets``, ``exchanges`` -- one row per vertex type / compute set / exchange
    of either report: name (exchanges: type), base_/new_/delta_ of two figures (vertices:
    code_bytes, vertex_state_bytes; compute_sets: vertex_state_bytes, cycles; exchanges:
    code_bytes, cycles; Int64, <NA> where a side does not record them), status; paired by name,
    then by normalised name (:func:`~profcompare.comparison.vertices.compare_by_name`)
``config_differences`` (a property, from the two reports' meta) -- setting, base, new (the values
    as a user reads them; None where a side does not set it), kind (intended |
    unexpected), moves_figures, note; see :mod:`profcompare.comparison.config_diff`

Details every consumer may rely on:

- ``status`` (and ``match``) columns of the tables are categoricals with the fixed categories
  :data:`STATUSES` (and :data:`MATCHES`). ``added`` = key only in new, ``removed`` = only in
  base; ``grew`` / ``shrank`` = |delta| above the noise threshold, else ``unchanged``. The
  threshold is ``min(noise_bytes, noise_pct / 100 * |base|)`` for byte columns and
  ``noise_pct / 100 * |base|`` for everything else (cycles, tile counts, samples/s); see
  :func:`noise_threshold`.
- ``summary.status`` is a plain str column with the same values plus ``"n/a"``: a summary
  metric that is NaN on either side (e.g. cycles without an execution profile) keeps NaN in
  base/new/delta/delta_pct and gets status ``"n/a"`` (summary metrics have no added/removed).
- Value columns (``base_*`` / ``new_*`` / ``delta_*`` sizes) are int64 (bytes) or float64
  (cycles per step) with the missing side counted as 0, so ``base + delta == new`` on every
  row. Descriptive columns of a missing side are missing: ``base_name`` / ``base_shape`` None,
  ``base_always_live`` / ``base_sharded`` <NA> (nullable boolean), ``base_entries`` 0.
- ``variables``: rows are paired only within the same parameter and role: first by
  attribution (parameter, role, name without graph indices), then by exact name, then by
  normalised name (:func:`normalise_variable_name`) when unique on each side; see
  :func:`_compare_variables`. A graph-scoped name's index (``Adam_subgraph(2)/``) never pairs
  rows by itself. Unpaired rows are added/removed. ``name`` is the new name when the row
  exists in new, else the base name.
- ``liveness``: ``liveness.attrs["alignment"]`` says how the curves were aligned:
  ``"program"`` (by program-name sequence: steps on a longest common subsequence of names paired,
  differing stretches between them paired by position) or
  ``"position"`` (step i with step i; used when the sequences are large and different or
  too dissimilar). ``program`` is the base program name where base has a step, else new's.
- Rows are ordered: categories by group then PopVision category order; variables, code and
  remote_buffers by |delta| descending then name; tiles by tile; execution in
  :data:`profcompare.model.PHASES` order.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from profcompare.comparison.comparison import Comparison
from profcompare.comparison.join import MATCHES, NOT_AVAILABLE, STATUSES, noise_threshold
from profcompare.comparison.limits import Limit, check_limits, parse_limit
from profcompare.comparison.liveness import _compare_liveness
from profcompare.comparison.operations import _compare_operations, compare_operations
from profcompare.comparison.vertices import _compare_vertex_tables
from profcompare.comparison.programs import PROGRAM_STATUSES, _compare_programs, compare_programs
from profcompare.comparison.tables import (
    _compare_categories,
    _compare_code,
    _compare_execution,
    _compare_ledger,
    _compare_remote_buffers,
    _compare_summary,
    _compare_tiles,
)
from profcompare.comparison.variables import _compare_variables, normalise_variable_name
from profcompare.errors import ProfcompareError, SameReportWarning
from profcompare.analysis.ledger import ledger_by_parameter, ledger_moves, peak_composition
from profcompare.model import Report
from profcompare.base.readable import readable


def _same_report(base: Report, new: Report) -> bool:
    if base is new:
        return True
    a, b = base.meta.source, new.meta.source
    if not a or not b:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def compare(base: Report, new: Report, *, noise_bytes: int = 64, noise_pct: float = 1.0) -> Comparison:
    """Compare two reports (delta = new - base); see the module docstring for every table.

    ``noise_bytes`` / ``noise_pct``: a change of at most ``noise_bytes`` *and* at most
    ``noise_pct`` percent of base (only the percentage for cycles and counts) is ``unchanged``
    (:func:`noise_threshold`). Raises ProfcompareError for a negative or non-finite threshold.
    """
    if not isinstance(base, Report) or not isinstance(new, Report):
        raise ProfcompareError("compare() needs two Report objects (open them with profcompare.open_report)")
    for label, value in (("noise_bytes", noise_bytes), ("noise_pct", noise_pct)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value) or value < 0:
            raise ProfcompareError(f"{label} must be a non-negative number, got {value!r}")
    if _same_report(base, new):
        warnings.warn(
            f"base and new are the same report ({base.meta.source or base.label}): every delta is 0",
            SameReportWarning,
            stacklevel=2,
        )
    return Comparison(
        base=base,
        new=new,
        summary=readable(_compare_summary(base, new, noise_bytes, noise_pct)),
        categories=_compare_categories(base, new, noise_bytes, noise_pct),
        variables=_compare_variables(base, new, noise_bytes, noise_pct),
        tiles=_compare_tiles(base, new, noise_bytes, noise_pct),
        code=_compare_code(base, new, noise_bytes, noise_pct),
        liveness=_compare_liveness(base, new),
        execution=_compare_execution(base, new, noise_pct),
        remote_buffers=_compare_remote_buffers(base, new, noise_bytes, noise_pct),
        noise_bytes=noise_bytes,
        noise_pct=float(noise_pct),
        ledger=_compare_ledger(base, new, noise_bytes, noise_pct),
        programs=_compare_programs(base, new),
        operations=_compare_operations(base, new, noise_bytes, noise_pct),
        **_compare_vertex_tables(base, new, noise_bytes, noise_pct),
    )


__all__ = [
    "MATCHES",
    "NOT_AVAILABLE",
    "PROGRAM_STATUSES",
    "STATUSES",
    "Comparison",
    "Limit",
    "check_limits",
    "compare",
    "compare_operations",
    "compare_programs",
    "ledger_by_parameter",
    "ledger_moves",
    "peak_composition",
    "noise_threshold",
    "normalise_variable_name",
    "parse_limit",
]
