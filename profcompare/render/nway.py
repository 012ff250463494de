"""The N-way view: several variants side by side (a run's ``index.html`` / ``index.json`` and its
terminal table; a sweep's page is the same view with a column per point).

One column per variant, the base marked; one row per summary metric; each value carries its
confidence (``~`` marks a modelled figure) and, beside the base, its change from the base
(coloured by whether it is better or worse, with the comparison's noise rule). The HTML page
is a Jinja2 template with autoescaping; its data travel only through ``tojson``; it needs no
script, so it opens offline anywhere.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2

from profcompare.render.templates_env import environment
import numpy as np
from markupsafe import Markup

from profcompare._version import __version__
from profcompare.model import HIGHER_IS_BETTER, METRIC_UNITS
from profcompare.analysis.nway import NWayTable
from profcompare.comparison.config_diff import config_differences
from profcompare.comparison.verdict import nway_verdict
from profcompare.render.format import UNTONED_METRICS, format_metric, format_pct, metric_label
from profcompare.render.json_values import frame_records
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE
from profcompare.render.ledger_words import TONE_LEGEND, liveness_rule
from profcompare.render.verdict_words import nway_headline, nway_sentences

#: The comparison's default noise rule (``profcompare compare``): a change within 64 bytes and
#: within 1% of the base is not coloured.
NOISE_BYTES = 64
NOISE_PCT = 1.0

LEGEND = (
    "~ = modelled: an estimate resting on the simulator's model constants (code size, layout, cycles, time; "
    "see docs/ipu-model.md), not a measurement. Unmarked figures are exact (they follow from the program) or "
    "measured (read from a real Poplar profile). Percentages are changes from the base column."
)


def _legend(rows: Sequence[NWayRow]) -> str:
    """The legend under the metrics, with how the two memory totals differ when both are shown."""
    shown = {row.metric for row in rows}
    return f"{LEGEND} {TOTAL_VS_PEAK_NOTE}" if {"total_bytes", "peak_liveness_bytes"} <= shown else LEGEND


@dataclass(frozen=True)
class NWayCell:
    """One value cell: its text, the change from the base (text, '' in the base column), a tone
    (good | bad | None) and its confidence."""

    text: str
    delta: str
    tone: str | None
    confidence: str


@dataclass(frozen=True)
class NWayRow:
    """One metric's row: its key, label, unit and a cell per variant."""

    metric: str
    label: str
    unit: str
    cells: tuple[NWayCell, ...]


def _tone(metric: str, base: float, value: float) -> str | None:
    if metric in UNTONED_METRICS or any(isinstance(v, float) and math.isnan(v) for v in (base, value)):
        return None
    delta = value - base
    noise_abs = NOISE_BYTES if METRIC_UNITS.get(metric) == "bytes" else math.inf
    if abs(delta) <= min(noise_abs, NOISE_PCT / 100.0 * abs(base)):
        return None
    better = delta > 0 if metric in HIGHER_IS_BETTER else delta < 0
    return "good" if better else "bad"


def nway_rows(table: NWayTable) -> tuple[NWayRow, ...]:
    """The rows of the N-way view: formatted values, changes from the base, tones, confidences."""
    rows = []
    for metric in table.metrics:
        base_value = float(table.values.at[metric, table.base])
        cells = []
        for label in table.labels:
            value = float(table.values.at[metric, label])
            level = str(table.confidence.at[metric, label])
            text = format_metric(metric, value)
            if level == "modelled" and not math.isnan(value):
                text = "~" + text
            pct = float(table.delta_pct.at[metric, label])
            delta = "" if label == table.base or math.isnan(pct) else format_pct(pct)
            tone = None if label == table.base else _tone(metric, base_value, value)
            cells.append(NWayCell(text, delta, tone, level))
        rows.append(NWayRow(metric, metric_label(metric), METRIC_UNITS.get(metric, ""), tuple(cells)))
    return tuple(rows)


@dataclass(frozen=True)
class LedgerRow:
    """One ledger row of the N-way view: (parameter, role, location) and a cell per variant."""

    parameter: str
    role: str
    location: str
    cells: tuple[NWayCell, ...]


#: The most ledger rows the index page lists; the rest are summed into one "other" row.
INDEX_LEDGER_ROWS = 30


def ledger_rows(table: NWayTable, top: int | None = None) -> tuple[LedgerRow, ...]:
    """The memory ledger side by side: bytes per (parameter, role, location) per variant, with
    the change from the base (exact for the program's state; see Report.ledger). With ``top``
    and more rows than that, the ``top`` rows whose bytes differ most from the base's in some
    variant (then the largest) stay, in the ledger's order, and the rest are summed per variant
    into a last "other (N rows)" row."""
    from profcompare.render.format import format_bytes
    from profcompare.render.labels import location_label, parameter_label

    ledger = table.ledger
    other = None
    if top is not None and len(ledger) > top + 1:
        values = ledger[list(table.labels)].to_numpy(dtype="float64")
        change = np.nanmax(np.abs(values - values[:, [table.labels.index(table.base)]]), axis=1, initial=0.0)
        size = np.nanmax(np.nan_to_num(values, nan=0.0), axis=1, initial=0.0)
        keep = np.sort(np.lexsort((-size, -np.nan_to_num(change, nan=0.0)))[:top])
        rest = np.ones(len(ledger), dtype=bool)
        rest[keep] = False
        other = ledger[rest]
        ledger = ledger.iloc[keep]

    def cells_of(row: Any, key_location: str) -> tuple[NWayCell, ...]:
        base_value = float(row[table.base])
        cells = []
        for label in table.labels:
            value = float(row[label])
            delta = ""
            if label != table.base and not math.isnan(value) and not math.isnan(base_value) and value != base_value:
                delta = format_bytes(value - base_value, signed=True)
            # Streaming Memory is off chip: a change there costs no tile memory and is not coloured
            tone = None if label == table.base or key_location == "streaming_memory" else \
                _tone("variable_bytes", base_value, value)
            cells.append(NWayCell(format_bytes(value), delta, tone, ""))
        return tuple(cells)

    rows = []
    for key, row in ledger.iterrows():
        parameter, role, location = (str(k) for k in key)
        rows.append(LedgerRow(parameter_label(parameter, role), role, location_label(location), cells_of(row, location)))
    if other is not None:
        sums = other[list(table.labels)].sum(axis=0, min_count=1)
        rows.append(LedgerRow(f"other ({len(other):,} rows)", "", "", cells_of(sums, "")))
    return tuple(rows)


def nway_liveness_rule(table: NWayTable) -> str | None:
    """The liveness rule line for the variants of ``table``, read from their side-by-side
    ledger: model state (weight, optimizer state, accumulator rows) not-always-live, always-live
    or both (see :func:`profcompare.render.ledger_words.liveness_rule`)."""
    ledger = table.ledger
    if not len(ledger):
        return None
    keys = ledger.index.to_frame(index=False)
    held = ledger.fillna(0.0).to_numpy().sum(axis=1) > 0
    state = keys["role"].astype(str).isin(("weight", "optimizer_state", "accumulator")).to_numpy() & held
    conventions = []
    if (state & (keys["location"].astype(str) == "not_always_live").to_numpy()).any():
        conventions.append("written_from_host")
    if (state & (keys["location"].astype(str) == "always_live").to_numpy()).any():
        conventions.append("always_live")
    return liveness_rule(tuple(conventions))


def verdict_text(table: NWayTable) -> tuple[str, ...]:
    """The N-way verdict in words: each variant against the base, then which fit and which is fastest."""
    return nway_sentences(nway_verdict(table))


def column_title(table: NWayTable, label: str) -> str:
    """A column's header: the label, ``(base)`` for the base and the status unless ok."""
    status = table.statuses.get(label, "ok")
    return label + (" (base)" if label == table.base else "") + ("" if status == "ok" else f" [{status}]")


def render_nway_text(table: NWayTable, *, title: str, color: bool = False, width: int | None = None,
                     notes: Sequence[str] = ()) -> str:
    """The N-way table for the terminal (drawn by the text renderer: one column per variant)."""
    from profcompare.render.sections import Cell, Column, Document, Section, Table
    from profcompare.render.text import render_document

    columns = (Column("Metric"), *(Column(column_title(table, label), numeric=True) for label in table.labels))
    rows = []
    metric_rows = nway_rows(table)
    for row in metric_rows:
        cells = [Cell(row.label)]
        for cell in row.cells:
            cells.append(Cell(cell.text + (f" ({cell.delta})" if cell.delta else ""), tone=cell.tone))
        rows.append(tuple(cells))
    verdict = Section("Verdict", notes=("Written from the figures below; bytes per replica.",),
                      items=verdict_text(table))
    section = Section("Summary metrics", (Table.of(columns, tuple(rows)),), (*notes, _legend(metric_rows)))
    rule = nway_liveness_rule(table)
    facts = (("liveness", rule),) if rule else ()
    return render_document(Document(title, facts, (), (verdict, section)), color=color, width=width)


def table_headline(table: NWayTable) -> str:
    """Return the N-way view in one sentence (:func:`~profcompare.render.verdict_words.nway_headline`
    of its verdict, the base's status taken from the table): what ``run`` opens and closes with for
    one or more than two variants, and what the run's index page and index.json show."""
    return nway_headline(nway_verdict(table), table.statuses.get(table.base, "ok"))


def nway_document(table: NWayTable, *, links: Mapping[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """The JSON document of the N-way view (``index.json``): :meth:`NWayTable.to_dict` plus its
    ``headline`` (:func:`table_headline`), ``links`` (variant label -> file of its comparison with
    the base), each variant's ``config_differences`` from the base (when both have a report) and
    ``extra`` keys."""
    document = table.to_dict()
    _add_config_differences(document, table)
    document["generator"] = f"profcompare {__version__}"
    document["headline"] = table_headline(table)
    verdict = nway_verdict(table)
    document["verdict"] = {"sentences": list(nway_sentences(verdict)), "facts": verdict.to_dict()}
    rule = nway_liveness_rule(table)
    if rule:
        document["liveness_rule"] = rule
    if links is not None:
        document["comparisons"] = dict(links)
    document.update(extra)
    return document


def _add_config_differences(document: dict[str, Any], table: NWayTable) -> None:
    """Give every variant of ``document`` (but the base) with a report its ``config_differences``
    from the base: the :func:`~profcompare.comparison.config_diff.config_differences` rows (none
    when the base has no report)."""
    base = table.metas.get(table.base)
    if base is None:
        return
    for variant in document["variants"]:
        meta = table.metas.get(variant["label"])
        if meta is not None and variant["label"] != table.base:
            variant["config_differences"] = frame_records(config_differences(base, meta))


#: the title of the index row saying what differs in each variant's configuration from the base's
DIFFERS_TITLE = "What differs from the base"


def differences_row(table: NWayTable) -> tuple[str, tuple[str, ...]]:
    """The index row of what differs in each variant's configuration from the base's (one text per
    variant, in column order): its differing settings as ``setting: value``, an unexpected one
    marked; "(the base)" for the base, "same configuration" when nothing differs, "" for a
    variant without a report (or when the base has none)."""
    base = table.metas.get(table.base)
    texts = []
    for label in table.labels:
        meta = table.metas.get(label)
        if label == table.base:
            texts.append("(the base)")
        elif base is None or meta is None:
            texts.append("")
        else:
            rows = config_differences(base, meta)
            rows = rows[rows["setting"].astype(str) != "variant"]  # the column title names it
            parts = [f"{r.setting}: {'not set' if r.new is None else r.new}"
                     + (" (unexpected)" if str(r.kind) == "unexpected" else "")
                     for r in rows.itertuples(index=False)]
            texts.append("; ".join(parts) if parts else "same configuration")
    return DIFFERS_TITLE, tuple(texts)


#: the titles of the index rows of an N-way table's details (:data:`profcompare.analysis.nway.DETAILS`)
OPERATIONS_CODE_TITLE = "Operations' code"
FULLEST_TILE_TITLE = "Fullest tile (incl. gaps)"


def detail_rows(table: NWayTable) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The index rows of ``table``'s details, one text per variant in column order: the
    operations' total code ("26.7 MiB (603 ops)") and the fullest tile ("617.4 KiB, tile 291");
    a row only where every variant records it (:attr:`NWayTable.details`)."""
    from profcompare.render.format import format_bytes

    details = table.details
    rows = []
    if "operations_code_bytes" in details.index:
        rows.append((OPERATIONS_CODE_TITLE, tuple(
            f"{format_bytes(details.at['operations_code_bytes', label])} "
            f"({int(details.at['operations', label]):,} ops)" for label in table.labels)))
    if "fullest_tile_bytes" in details.index:
        rows.append((FULLEST_TILE_TITLE, tuple(
            f"{format_bytes(details.at['fullest_tile_bytes', label])}, tile {int(details.at['fullest_tile', label])}"
            for label in table.labels)))
    return tuple(rows)


def render_nway_json(table: NWayTable, *, links: Mapping[str, str] | None = None, **extra: Any) -> str:
    """``index.json``: :func:`nway_document` as indented JSON (NaN written as null)."""
    return json.dumps(_jsonable(nway_document(table, links=links, **extra)), indent=2, allow_nan=False) + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return str(value)


def _environment() -> jinja2.Environment:
    return environment()


def render_nway_html(
    table: NWayTable,
    *,
    title: str,
    facts: Sequence[tuple[str, str]] = (),
    links: Mapping[str, str] | None = None,
    simulated: bool = False,
    compile_only: bool = False,
    figure: Markup | None = None,
    figure_title: str = "",
    figure_note: str = "",
    extra_rows: Sequence[tuple[str, Sequence[str]]] = (),
    errors: Mapping[str, str] | None = None,
    data: Mapping[str, Any] | None = None,
    data_id: str = "nway-data",
    headline: str = "",
) -> str:
    """The N-way page (one self-contained HTML document, no script).

    ``facts`` are (key, text) lines under the title; ``links`` maps a variant label to the
    (relative) href of its comparison with the base; ``figure`` is inline SVG (made by
    matplotlib from numbers and escaped labels) shown above the table; ``compile_only`` adds the
    compile-only banner under the simulated one; ``extra_rows`` are
    (title, one text per variant) rows above the metrics (e.g. a sweep's knob values);
    ``errors`` maps a label to its error text; ``data`` is the JSON block (default: the
    :func:`nway_document`), embedded with ``tojson`` under ``data_id``; ``headline`` is the
    sentence shown first under the title ("" for none; a run's index passes :func:`table_headline`).
    """
    statuses = [table.statuses.get(label, "ok") for label in table.labels]
    metric_rows = nway_rows(table)
    document = dict(data) if data is not None else _jsonable(nway_document(table, links=links))
    return _environment().get_template("nway.html.j2").render(
        title=title,
        headline=headline,
        facts=list(facts),
        simulated=simulated,
        compile_only=compile_only,
        figure=figure,
        figure_title=figure_title,
        figure_note=figure_note,
        columns=[(label, label == table.base, status, (links or {}).get(label)) for label, status in
                 zip(table.labels, statuses, strict=True)],
        extra_rows=list(extra_rows),
        rows=metric_rows,
        ledger=ledger_rows(table, INDEX_LEDGER_ROWS),
        ledger_total=len(table.ledger),
        ledger_top=INDEX_LEDGER_ROWS,
        errors=[(label, (errors or {}).get(label, "")) for label in table.labels] if errors and any(errors.values()) else [],
        legend=_legend(metric_rows),
        tone_legend=TONE_LEGEND,
        verdict=verdict_text(table),
        liveness_rule=nway_liveness_rule(table),
        data=document,
        data_id=data_id,
        version=__version__,
    )


__all__ = [
    "LEGEND",
    "NWayCell",
    "NWayRow",
    "LedgerRow",
    "DIFFERS_TITLE",
    "column_title",
    "detail_rows",
    "differences_row",
    "INDEX_LEDGER_ROWS",
    "ledger_rows",
    "nway_document",
    "nway_rows",
    "render_nway_html",
    "render_nway_json",
    "render_nway_text",
    "table_headline",
]
