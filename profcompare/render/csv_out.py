"""CSV output (``--format csv``): one table per output, one header line, raw numbers.

- ``show``: the summary, columns ``metric, unit, value, confidence`` (value in the unit: bytes,
  tiles, cycles, samples/s; empty when the report cannot say, e.g. cycles without an execution
  profile; confidence exact | modelled | measured).
- ``compare``: the variable diff, one row per variable (all of them unless ``--top N`` keeps
  the N largest changes by |delta_bytes|), with every :attr:`Comparison.variables` column: name,
  match, base_name, new_name, kind, base_bytes, new_bytes, delta_bytes, delta_pct, status,
  base_always_live, new_always_live, base_shape, new_shape, dtype. Which report is base and
  which is new is not in the CSV; use ``--format json`` for the metadata.
- ``variables``: the selected variables, with every Report ``variables`` column.
- ``show --table ledger`` / ``compare --table ledger``: the memory ledger (:func:`ledger_csv`).
- ``show --table ID`` / ``compare --table ID``: the table of that id on the HTML page, as the page
  draws it (:func:`page_table_csv`): headers, rows, then the footer rows ("other", "total").

Bytes are integers; missing values are empty fields. Exports are complete by default; rows
cut by ``--top`` are left out (no synthetic "other" row, and the CLI says on stderr how many),
so every row is a real variable.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from profcompare.comparison import Comparison
from profcompare.model import METRIC_UNITS, METRICS, Report
from profcompare.render.control_chars import visible
from profcompare.render.format import is_missing
from profcompare.render.json_out import metric_value
from profcompare.render.json_values import frame_records
from profcompare.errors import ProfcompareError
from profcompare.render.page.export import find_table, table_ids, table_rows
from profcompare.render.sections import VariablesView, comparison_variables_view, limit
from profcompare.render.sections.order import RowLimits, comparison_sections, report_sections


def _field(value: Any) -> Any:
    if value is None or is_missing(value):
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, str):
        return visible(value)
    return value


def _write(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_field(v) for v in row])
    return buffer.getvalue()


def _frame_csv(frame: pd.DataFrame) -> str:
    records = frame_records(frame)
    header = [str(c) for c in frame.columns]
    return _write(header, ([r[c] for c in header] for r in records))


def report_csv(report: Report) -> str:
    """Return the summary of ``report`` as CSV: columns metric, unit, value, confidence."""
    summary = report.summary()
    confidence = report.confidence()
    return _write(("metric", "unit", "value", "confidence"),
                  ((m, METRIC_UNITS[m], metric_value(m, summary[m]), confidence[m]) for m in METRICS))


def comparison_csv(cmp: Comparison, *, top: int | None = 20) -> str:
    """Return the variable diff of ``cmp`` as CSV (top-N changes; the Comparison.variables columns)."""
    return _frame_csv(comparison_variables_view(cmp, top).shown_rows)


def ledger_csv(obj: Report | Comparison) -> str:
    """Return the memory ledger as CSV, every row: a report's :meth:`Report.ledger` columns
    (parameter, role, location, bytes, bytes_at_peak, first_step, last_step, rows) or a
    comparison's :attr:`Comparison.ledger` columns (parameter, role, location, base_/new_/delta_
    bytes, delta_pct, status, bytes at each peak, each side's first/last step)."""
    return _frame_csv(obj.ledger() if isinstance(obj, Report) else obj.ledger)


def page_table_csv(obj: Report | Comparison, table_id: str, *, top: int | None = None) -> str:
    """Return the page table ``table_id`` of a report's or a comparison's page as CSV, as the
    page draws it (:meth:`RowLimits.page <profcompare.render.sections.order.RowLimits.page>`):
    its column headers, its rows, then its footer rows ("other", "total"); a figure is its exact
    value. Raises ProfcompareError, naming the page's tables, when no table has that id."""
    if isinstance(obj, Comparison):
        sections = comparison_sections(obj, RowLimits.page(top))
    else:
        sections = report_sections(obj, RowLimits.page(top))
    table = find_table(sections, table_id)
    if table is None:
        raise ProfcompareError(f"no table {table_id!r} on this page; its tables: {', '.join(table_ids(sections))}")
    header, rows = table_rows(table)
    return _write(header, rows)


def variables_csv(result: VariablesView) -> str:
    """Return the selected variables as CSV (the Report variables columns)."""
    return _frame_csv(result.view.shown_rows)


class CsvRenderer:
    """Render a report summary, a variable diff or a variables view as CSV."""

    name = "csv"
    file_extension = ".csv"

    def render(self, obj: Report | Comparison | VariablesView, *, top: int = 0) -> str:
        """Return the CSV text (see the module docstring for the table of each input); every
        row unless ``top`` (> 0) limits it."""
        if isinstance(obj, Comparison):
            return comparison_csv(obj, top=limit(top))
        if isinstance(obj, Report):
            return report_csv(obj)
        if isinstance(obj, VariablesView):
            return variables_csv(obj)
        raise TypeError(f"cannot render a {type(obj).__name__} as CSV")


__all__ = ["CsvRenderer", "comparison_csv", "ledger_csv", "page_table_csv", "report_csv", "variables_csv"]
