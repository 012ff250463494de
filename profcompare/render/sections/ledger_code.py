"""The memory ledger's code and cycles as a table, for every medium: per (parameter, role), the
control and exchange code and the device cycles per run of the ops acting on that parameter's
data, then the named rows ("(activations)", "(several parameters)", "(not attributed to an op)")
and a total that equals the operations table's (the report's code bytes and device cycles per
run). A comparison's table has base, new and delta of both and names each row's op whose code
changed most; its largest |delta code| first. Only when a report has operations (``ops``).

It is the third table of the "Memory ledger" section (:mod:`profcompare.render.sections.ledger`),
page id ``ledger-code``: ``--format csv --table ledger-code`` writes it, ``--format json`` has
it in ``sections`` and complete as ``ledger_code``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.analysis.ledger_code import NAMED_ROWS, ledger_code
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_bytes, format_count, status_tone
from profcompare.render.html_model import Cell, Column, Row, Table, bytes_cell, cut_note, sort_key, text_cell
from profcompare.render.ledger_words import parameter_text

#: the page id of the table (and its ``--table`` name for CSV)
LEDGER_CODE_ID = "ledger-code"

_NOTE = ("Code and cycles per run of the ops acting on each parameter's data, by the role they serve; {named} "
         "hold the rest; the total is the report's code and device cycles per run. Bytes moved: what the row's host "
         "and remote transfers and collectives move per run and replica, as the time diff charges them.")


def _note(view: analysis.TopN) -> str:
    """The table's note: what its rows hold, then how many are shown and, when some are cut,
    where every row is."""
    cut = cut_note(view, "rows")[:-1] + (" (every row: --format json, as ledger_code)" if view.cut else "") + "."
    return _NOTE.format(named=", ".join(f'"{n}"' for n in NAMED_ROWS)) + " " + cut


def has_ops(obj: Report | Comparison) -> bool:
    """Whether ``obj`` (or either report of it) records operations: the table is drawn only then."""
    if isinstance(obj, Comparison):
        return bool(len(obj.base.operations) or len(obj.new.operations))
    return bool(len(obj.operations))


def _label(parameter: Any) -> str:
    text = str(parameter)
    return text if text in NAMED_ROWS else parameter_text(text)


def _cycles_cell(value: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(format_count(value, signed=signed), sort_key(value), tone)


def report_ledger_code_table(report: Report, top: int | None) -> Table:
    """``report``'s ledger code and cycles, largest code first, cut to ``top`` (None: all), an
    "other" row for the rest and a total. Columns: Parameter, Role, Code, Cycles per run, Ops,
    Bytes moved (per run)."""
    frame = ledger_code(report)
    view = analysis.top_n(frame, top, "code_bytes", label_column="parameter",
                          sum_columns=("code_bytes", "cycles", "ops", "bytes_moved"))
    columns = (Column("Parameter", key="parameter"), Column("Role", key="role"), Column("Code", True, key="code"),
               Column("Cycles per run", True, key="cycles"), Column("Ops", True, key="ops"),
               Column("Bytes moved", True, key="bytes_moved"))
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = _label(r["parameter"])
        rows.append(Row((Cell(label, label), text_cell(r["role"]), bytes_cell(r["code_bytes"]),
                         _cycles_cell(r["cycles"]), Cell(format_count(r["ops"]), sort_key(r["ops"])),
                         _moved_cell(r["bytes_moved"])),
                        {"name": f"{label} {r['role']}"}))
    footer: list[Row] = []
    if view.cut:
        other = view.other
        assert other is not None
        footer.append(Row((Cell(f"other ({view.cut:,} rows)"), Cell(""), bytes_cell(other["code_bytes"]),
                           _cycles_cell(other["cycles"]), Cell(format_count(other["ops"]), sort_key(other["ops"])),
                           _moved_cell(other["bytes_moved"]))))
    footer.append(Row((Cell("total"), Cell(""), bytes_cell(int(frame["code_bytes"].sum())),
                       _cycles_cell(frame["cycles"].sum(min_count=1)),
                       Cell(format_count(int(frame["ops"].sum())), int(frame["ops"].sum())),
                       _moved_cell(frame["bytes_moved"].sum(min_count=1)))))
    return Table(columns, tuple(rows), id=LEDGER_CODE_ID, footer=tuple(footer), note=_note(view),
                 empty="no operations")


def _moved_cell(value: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    """Bytes moved, "" where unknown (no execution profile)."""
    if pd.isna(value):
        return Cell("", sort_key(value))
    return bytes_cell(int(value), signed=signed, tone=tone)


def _largest_op(r: Any) -> Cell:
    name = str(r["largest_op"])
    delta = int(r["largest_op_delta_code_bytes"])
    if not name or name == str(r["parameter"]):
        return Cell("", "")
    text = f"{name} ({format_bytes(delta, signed=True)})"
    return Cell(text, name)


def _tone(delta: Any) -> str | None:
    if pd.isna(delta):
        return None
    return status_tone("grew" if delta > 0 else "shrank" if delta < 0 else "unchanged")


def comparison_ledger_code_table(cmp: Comparison, top: int | None) -> Table:
    """The comparison's ledger code and cycles, largest |delta code| first, cut to ``top`` (None:
    all), an "other" row for the rest and a total. Columns: Parameter, Role, Base code, New code,
    Delta code, Base cycles, New cycles, Delta cycles (per run), Base / New / Delta bytes moved (per
    run), Largest code change (the row's op
    whose code change explains most of the row's, and by how much); each delta coloured by its
    sign (the status is in ``Comparison.ledger_code()``)."""
    frame = cmp.ledger_code()
    sums = ("base_code_bytes", "new_code_bytes", "delta_code_bytes", "base_cycles", "new_cycles", "delta_cycles",
            "base_bytes_moved", "new_bytes_moved", "delta_bytes_moved")
    view = analysis.top_n(frame, top, "delta_code_bytes", label_column="parameter", sum_columns=sums, key=abs)
    columns = (
        Column("Parameter", key="parameter"), Column("Role", key="role"),
        Column("Base code", True, key="base_code"), Column("New code", True, key="new_code"),
        Column("Delta code", True, key="delta_code"),
        Column("Base cycles", True, key="base_cycles"), Column("New cycles", True, key="new_cycles"),
        Column("Delta cycles", True, key="delta_cycles"),
        Column("Base bytes moved", True, key="base_bytes_moved"), Column("New bytes moved", True, key="new_bytes_moved"),
        Column("Delta bytes moved", True, key="delta_bytes_moved"), Column("Largest code change", key="largest_op"),
    )
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = _label(r["parameter"])
        code_tone = status_tone("grew" if r["delta_code_bytes"] > 0 else "shrank" if r["delta_code_bytes"] < 0
                                else "unchanged")
        delta_cycles = r["delta_cycles"]
        cycles_tone = None if pd.isna(delta_cycles) else status_tone(
            "grew" if delta_cycles > 0 else "shrank" if delta_cycles < 0 else "unchanged")
        rows.append(Row((
            Cell(label, label), text_cell(r["role"]),
            bytes_cell(r["base_code_bytes"]), bytes_cell(r["new_code_bytes"]),
            bytes_cell(r["delta_code_bytes"], signed=True, tone=code_tone),
            _cycles_cell(r["base_cycles"]), _cycles_cell(r["new_cycles"]),
            _cycles_cell(delta_cycles, signed=True, tone=cycles_tone),
            _moved_cell(r["base_bytes_moved"]), _moved_cell(r["new_bytes_moved"]),
            _moved_cell(r["delta_bytes_moved"], signed=True, tone=_tone(r["delta_bytes_moved"])), _largest_op(r),
        ), {"name": f"{label} {r['role']}", "status": str(r["status"])}))

    def sums_row(label: str, values: Any) -> Row:
        return Row((Cell(label), Cell(""), bytes_cell(values["base_code_bytes"]), bytes_cell(values["new_code_bytes"]),
                    bytes_cell(values["delta_code_bytes"], signed=True), _cycles_cell(values["base_cycles"]),
                    _cycles_cell(values["new_cycles"]), _cycles_cell(values["delta_cycles"], signed=True),
                    _moved_cell(values["base_bytes_moved"]), _moved_cell(values["new_bytes_moved"]),
                    _moved_cell(values["delta_bytes_moved"], signed=True), Cell("")))

    footer: list[Row] = []
    if view.cut:
        assert view.other is not None
        footer.append(sums_row(f"other ({view.cut:,} rows)", view.other))
    totals = {c: (int(frame[c].sum()) if c.endswith("code_bytes") else frame[c].sum(min_count=1)) for c in sums}
    footer.append(sums_row("total", totals))
    return Table(columns, tuple(rows), id=LEDGER_CODE_ID, footer=tuple(footer),
                 note="Largest |delta code| first. " + _note(view),
                 empty="neither report records operations")


__all__ = ["LEDGER_CODE_ID", "comparison_ledger_code_table", "has_ops", "report_ledger_code_table"]
