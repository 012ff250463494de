"""The ledger at the not-always-live peak, for every medium: what is live at one report's peak
("Live at the not-always-live peak", Graph Analyser's Insights), and which parameters and roles
make the difference between two reports' peaks ("What changed the not-always-live peak").
Both sections have the page anchor ``peak``; bytes are per replica."""

from __future__ import annotations

from profcompare.analysis import views as analysis
from profcompare.analysis.ledger import peak_step
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_bytes, status_tone
from profcompare.render.html_model import Cell, Column, Row, Section, Table, bytes_cell, cut_note, sort_key, text_cell
from profcompare.render.ledger_words import parameter_text, peak_change_notes, steps_text
from profcompare.render.sections.document import _str

#: the titles of the two sections (one per report, one per comparison)
REPORT_PEAK_TITLE = "Live at the not-always-live peak"
COMPARISON_PEAK_TITLE = "What changed the not-always-live peak"


def report_peak_section(report: Report, top: int | None) -> Section:
    """The variables live at ``report``'s not-always-live peak step, largest first, cut to ``top``
    (None: all): Variable, Parameter, Role, Bytes, Live steps (first-last, sorted by the first);
    the lead says where the peak is and how much of it the variables listed hold."""
    step = peak_step(report)
    if step is None:
        return Section(REPORT_PEAK_TITLE, id="peak", text="No program steps in this report.")
    live = report.live_at_peak()
    view = analysis.top_n(live, top, "bytes", label_column="name", sum_columns=("bytes",))
    columns = (Column("Variable", key="name"), Column("Parameter", key="parameter"), Column("Role", key="role"),
               Column("Bytes", True, key="bytes"), Column("Live steps", key="steps"))
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = parameter_text(r["parameter"], r["role"])
        rows.append(Row((text_cell(r["name"]), Cell(label, label), text_cell(_str(r["role"])), bytes_cell(r["bytes"]),
                         Cell(steps_text(r["first_step"], r["last_step"]), sort_key(r["first_step"]))),
                        {"name": str(r["name"])}))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} variables)"), Cell(""), Cell(""), bytes_cell(other["bytes"]),
                       Cell(""))),)
    curve = report.liveness_per_step()
    program = curve.loc[curve["step"] == step, "program"]
    where = f"step {step:,}" + (f" ({program.iloc[0]})" if len(program) else "")
    peak_bytes = int(curve["not_always_live_bytes"].max())
    listed = int(live["bytes"].sum()) if len(live) else 0
    text = f"At {where}: {len(live):,} variables, {format_bytes(listed)} of the peak's {format_bytes(peak_bytes)}."
    if listed != peak_bytes:
        text += f" {format_bytes(peak_bytes - listed)} of the peak is not listed in the variables table."
    table = Table(columns, tuple(rows), id="peak-live", footer=footer, note=cut_note(view, "variables"),
                  empty="no listed variable is live at the peak")
    return Section(REPORT_PEAK_TITLE, id="peak", tables=(table,), text=text)


def comparison_peak_section(cmp: Comparison, top: int | None) -> Section:
    """Which (parameter, role) rows make the difference between the two not-always-live peaks,
    largest |delta| first, cut to ``top`` (None: all): Parameter, Role, Base, New, Delta; the lead
    says where each peak is and how much of its change the rows explain."""
    base_peak, new_peak = analysis.liveness_peak(cmp.base), analysis.liveness_peak(cmp.new)
    if base_peak["step"] is None and new_peak["step"] is None:
        return Section(COMPARISON_PEAK_TITLE, id="peak", text="Neither report records program steps.")
    frame = cmp.peak_composition()
    view = analysis.top_n(frame, top, "delta_bytes", label_column="parameter",
                          sum_columns=("base_bytes", "new_bytes", "delta_bytes"), key=abs)
    columns = (Column("Parameter", key="parameter"), Column("Role", key="role"), Column("Base", True, key="base"),
               Column("New", True, key="new"), Column("Delta", True, key="delta"))
    rows = []
    for r in view.shown_rows.to_dict("records"):
        delta = int(r["delta_bytes"])
        label = parameter_text(r["parameter"], r["role"])
        tone = status_tone("grew" if delta > 0 else "shrank" if delta < 0 else "unchanged")
        rows.append(Row((Cell(label, label), text_cell(_str(r["role"])), bytes_cell(r["base_bytes"]),
                         bytes_cell(r["new_bytes"]), bytes_cell(delta, signed=True, tone=tone)), {"name": label}))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} rows)"), Cell(""), bytes_cell(other["base_bytes"]),
                       bytes_cell(other["new_bytes"]), bytes_cell(other["delta_bytes"], signed=True))),)
    text = " ".join(peak_change_notes(base_peak, new_peak, int(frame["delta_bytes"].sum()) if len(frame) else 0))
    table = Table(columns, tuple(rows), id="peak-composition", footer=footer, note=cut_note(view, "rows"),
                  empty="no listed variable is live at either report's peak")
    return Section(COMPARISON_PEAK_TITLE, id="peak", tables=(table,), text=text)


__all__ = ["COMPARISON_PEAK_TITLE", "REPORT_PEAK_TITLE", "comparison_peak_section", "report_peak_section"]
