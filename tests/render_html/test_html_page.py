"""The HTML page: escaping, self-containment, badges, sections, top-N notes, embedded data."""

from __future__ import annotations

import html as htmllib
import json
import re
from html.parser import HTMLParser

import bokeh
import pytest
from html_fixtures import ESCAPE_NAME, build_report

from profcompare.comparison import compare
from profcompare.model import METRICS, Report
from profcompare.render.base import get_renderer
from profcompare.render.html import HtmlRenderer
from profcompare.render.sections import matched_changes_first


@pytest.fixture(scope="module")
def comparison(onchip: Report, offchip: Report):
    return compare(onchip, offchip)


@pytest.fixture(scope="module")
def diff_html(comparison) -> str:
    return HtmlRenderer().render(comparison, top=50)


class _Collector(HTMLParser):
    """Collects script blocks, element attributes and the visible text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.attributes: list[tuple[str, str, str | None]] = []
        self.text: list[str] = []
        self.tags: list[str] = []
        self._script: dict[str, str | None] | None = None
        self._script_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            self.attributes.append((tag, name, value))
        if tag == "script":
            self._script = dict(attrs)
            self._script_text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._script_text)))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script_text.append(data)
        else:
            self.text.append(data)


def _parse(page: str) -> _Collector:
    parser = _Collector()
    parser.feed(page)
    parser.close()
    return parser


def _data(page: str) -> dict:
    parsed = _parse(page)
    blocks = [text for attrs, text in parsed.scripts if attrs.get("id") == "profcompare-data"]
    assert len(blocks) == 1
    return json.loads(blocks[0])


def _chart(page: str, chart: str) -> tuple[str, dict]:
    """The raw text and the parsed Bokeh JSON item of one interactive chart of the page."""
    parsed = _parse(page)
    (raw,) = [text for attrs, text in parsed.scripts if attrs.get("data-chart") == chart]
    return raw, json.loads(raw)


def _strings(value) -> list[str]:  # type: ignore[no-untyped-def]
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_renderer_is_registered_and_declares_html() -> None:
    renderer = get_renderer("html")
    assert isinstance(renderer, HtmlRenderer)
    assert renderer.name == "html"
    assert renderer.file_extension == ".html"


def test_hostile_variable_name_is_escaped_everywhere(diff_html: str) -> None:
    # the raw markup of the name must never reach the page as markup
    assert "<b>x</b>" not in diff_html
    # the line marking a page with JavaScript (its detail sections fold), the nine charts' JSON (the
    # tile map, tile histogram and lifetimes among them), the liveness chart's step panel, the page's
    # JSON, the charting library and our code, nothing else
    assert diff_html.count("</script>") == 14
    parsed = _parse(diff_html)
    assert "b" not in parsed.tags
    assert [(attrs.get("type"), attrs.get("data-chart") or attrs.get("id") or attrs.get("data-library"))
            for attrs, _ in parsed.scripts] == [
        (None, None),
        ("application/json", "ledger-plot"),
        ("application/json", "chart-liveness"),
        ("application/json", "chart-liveness-panel-data"),
        ("application/json", "chart-lifetimes"),
        ("application/json", "chart-categories"),
        ("application/json", "chart-tiles"),
        ("application/json", "chart-tile-map"),
        ("application/json", "chart-tile-histogram"),
        ("application/json", "chart-code"),
        ("application/json", "chart-execution"),
        ("application/json", "profcompare-data"),
        (None, f"Bokeh {bokeh.__version__}"),
        (None, None),
    ]
    assert parsed.scripts[0][1] == 'document.documentElement.classList.add("js");'
    code = parsed.scripts[13][1]
    assert "applyFilter" in code and "sortTable" in code and "embed_item" in code
    # the liveness tooltip lists the variable (live at steps 2-3 of new): JSON-escaped in the page,
    # the exact name once parsed; Bokeh inserts tooltip values as text
    raw_chart, chart = _chart(diff_html, "chart-liveness")
    assert "\\u003c/script\\u003e\\u003cb\\u003ex\\u003c/b\\u003e" in raw_chart
    assert any(ESCAPE_NAME in text and text.startswith(("layer", ESCAPE_NAME)) for text in _strings(chart))
    # the name is shown as text in the variable table and its filter attribute ...
    assert ESCAPE_NAME in "".join(parsed.text)
    assert ("tr", "data-name", ESCAPE_NAME) in parsed.attributes
    assert htmllib.escape(ESCAPE_NAME, quote=False) in diff_html
    # ... and travels JSON-encoded in the data block, which still parses to the exact name
    # the step panel's names travel JSON-escaped too (the name is live at steps 2-3 of new)
    raw_panel = parsed.scripts[3][1]
    assert "<b>" not in raw_panel and ESCAPE_NAME in json.loads(raw_panel)["names"]
    raw_json = parsed.scripts[11][1]
    assert "\\u003c/script\\u003e\\u003cb\\u003ex\\u003c/b\\u003e" in raw_json
    assert ESCAPE_NAME in [row[0] for row in json.loads(raw_json)["variables"]["rows"]]


def test_json_block_is_valid_and_matches_the_comparison(diff_html: str, comparison) -> None:
    data = _data(diff_html)
    assert data["schema_version"] == 1
    assert data["kind"] == "comparison"
    assert data["reports"]["base"]["label"] == "onchip"
    assert data["reports"]["new"]["label"] == "offchip-sharded"
    assert set(data["summary"]) == set(METRICS)
    row = comparison.summary.loc["peak_liveness_bytes"]
    assert data["summary"]["peak_liveness_bytes"]["delta"] == pytest.approx(row["delta"])
    # NaN (e.g. a percentage over a zero base) is encoded as null, which JSON.parse accepts
    assert data["summary"]["streaming_memory_bytes"]["delta_pct"] is None
    assert "NaN" not in _parse(diff_html).scripts[0][1]
    variables = data["variables"]
    assert variables["columns"][:7] == ["name", "kind", "base_bytes", "new_bytes", "delta_bytes", "delta_pct", "status"]
    assert variables["shown"] == variables["total"] == len(comparison.variables) and variables["cut"] == 0
    first = comparison.variables.iloc[0]
    assert variables["rows"][0][:5] == [
        first["name"],
        first["kind"],
        first["base_bytes"],
        first["new_bytes"],
        first["delta_bytes"],
    ]


def test_page_is_self_contained(diff_html: str) -> None:
    parsed = _parse(diff_html)
    loading = {"src", "href", "xlink:href", "data", "poster", "srcset", "action"}
    for tag, name, value in parsed.attributes:
        if name in loading and value:
            assert value.startswith("#"), f"<{tag} {name}={value!r}> loads something"
    assert "<link" not in diff_html
    assert "@import" not in diff_html
    # (the inlined BokehJS has url() templates of models the page does not use, e.g. icon fonts;
    # the browser test checks that the page makes no request at all)
    library = next(text for attrs, text in parsed.scripts if attrs.get("data-library"))
    assert not re.search(r"url\((?!#)", diff_html.replace(library, "")), "CSS url() other than a same-document reference"
    # every chart is drawn by the inlined BokehJS from its JSON: no static SVG figure
    assert not re.search(r"<svg\b", diff_html.replace(library, ""))
    charts = re.findall(r'<script type="application/json" class="chart-data" data-chart="([^"]+)"', diff_html)
    assert charts == ["ledger-plot", "chart-liveness", "chart-lifetimes", "chart-categories", "chart-tiles",
                      "chart-tile-map", "chart-tile-histogram", "chart-code", "chart-execution"]


def test_header_names_base_and_new_with_simulated_badges(diff_html: str) -> None:
    text = " ".join(" ".join(_parse(diff_html).text).split())
    assert "onchip (base) vs offchip-sharded (new)" in text
    assert re.search(r"base\s+onchip\s+SIMULATED", text)
    assert re.search(r"new\s+offchip-sharded\s+SIMULATED", text)
    assert text.count("SIMULATED") == 2
    assert "profcompare-sim 0.1.0" in text
    assert "Mk2: 4 replicas x 1 IPU, 1472 tiles per IPU x 624.0 KiB" in text


def test_poplar_report_has_no_simulated_badge(onchip: Report) -> None:
    hardware = build_report("onchip", simulated=False)
    page = HtmlRenderer().render(compare(hardware, onchip))
    text = " ".join(" ".join(_parse(page).text).split())
    assert text.count("SIMULATED") == 1
    assert re.search(r"base\s+onchip\s+POPLAR", text)
    assert "Poplar 3.3.0" in text


def test_out_of_memory_report_is_flagged(onchip: Report) -> None:
    oom = Report.build(onchip.meta.replace(oom=True), tiles=onchip.tiles, liveness=onchip.liveness)
    page = HtmlRenderer().render(oom)
    assert "OUT OF MEMORY" in " ".join(_parse(page).text)


def test_comparison_page_has_all_sections_with_diff_columns(diff_html: str) -> None:
    ids = {value for tag, name, value in _parse(diff_html).attributes if name == "id" and tag == "section"}
    assert {"summary", "memory", "liveness", "tiles", "variables", "code", "streaming", "execution"} <= ids
    summary = diff_html[diff_html.index('id="summary-table"') :]
    summary = summary[: summary.index("</table>")]
    assert re.search(r"Base.*New.*Delta.*Delta %.*Status", summary, re.DOTALL)
    # a grown metric is coloured as a cost, a shrunk one as a gain, throughput the other way round
    assert re.search(r'data-metric="not_always_live_peak_bytes".*?tone-bad[^>]*>grew<', summary, re.DOTALL)
    assert re.search(r'data-metric="always_live_bytes".*?tone-good[^>]*>shrank<', summary, re.DOTALL)
    assert re.search(r'data-metric="samples_per_second".*?tone-bad[^>]*>shrank<', summary, re.DOTALL)


def test_remote_buffers_and_execution_tables(diff_html: str) -> None:
    remote = diff_html[diff_html.index('id="remote-table"') :]
    remote = remote[: remote.index("</table>")]
    assert remote.count('data-status="added"') == 8  # the sharded Adam state moved to Streaming Memory
    assert "layer0/weight/first_moment" in remote
    execution = diff_html[diff_html.index('id="execution-table"') :]
    execution = execution[: execution.index("</table>")]
    assert 'data-status="added"' in execution and ">Streaming Memory<" in execution


def test_variable_table_is_cut_at_its_row_bound_with_other_row(comparison, monkeypatch: pytest.MonkeyPatch) -> None:
    from profcompare.render import html as html_module

    # every variable up to the page's bound, whatever --top: here the bound is made 5
    assert len(comparison.variables) < html_module.HTML_MAX_VARIABLE_ROWS
    monkeypatch.setattr(html_module, "HTML_MAX_VARIABLE_ROWS", 5)
    page = HtmlRenderer().render(comparison, top=20)
    table = page[page.index('id="variables-table"') :]
    table = table[: table.index("</table>")]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    assert body.count("<tr") == 5
    total = len(comparison.variables)
    assert (f"Top 5 of {total:,} variables shown; {total - 5:,} more in the &#39;other&#39; row") in page
    assert "This page holds at most 5 variables; the filter applies to these. `--format json` or `--format csv` " \
           "write them all." in page
    assert f"other ({total - 5:,} variables)" in table
    # rows are the variables found in both reports that changed first, then the added and
    # removed, then the unchanged, each by absolute change, as in every medium
    names = re.findall(r'<tr data-name="([^"]*)"', body)
    expected = matched_changes_first(comparison, 5).shown_rows["name"]
    assert names == [htmllib.escape(n) for n in expected]


def test_single_report_page_has_no_deltas(offchip: Report) -> None:
    page = HtmlRenderer().render(offchip, top=10)
    parsed = _parse(page)
    text = " ".join(" ".join(parsed.text).split())
    assert "profcompare: offchip-sharded" in text
    assert "SIMULATED" in text
    assert "Delta" not in text and "base" not in text.lower().split()
    summary = page[page.index('id="summary-table"') :]
    summary = summary[: summary.index("</table>")]
    assert summary.count("<tr") == 1 + len(METRICS)
    assert "tone-good" not in summary and "tone-bad" not in summary  # no deltas, so no good/bad
    levels = offchip.confidence()  # confidence of every figure
    assert summary.count("~ modelled") == int((levels == "modelled").sum()) >= 9
    assert summary.count(">exact<") == int((levels == "exact").sum()) == 2
    data = _data(page)
    assert data["kind"] == "report" and list(data["reports"]) == ["report"]
    assert f"All {len(offchip.variables):,} variables shown." in text
    library = next(text for attrs, text in parsed.scripts if attrs.get("data-library"))
    assert not re.search(r"<svg\b", page.replace(library, ""))
    charts = re.findall(r'<script type="application/json" class="chart-data" data-chart="([^"]+)"', page)
    assert charts == ["chart-liveness", "chart-categories", "chart-tiles", "chart-tile-map", "chart-tile-histogram",
                      "chart-code", "chart-execution"]
    everything = HtmlRenderer().render(offchip, top=100)
    assert ESCAPE_NAME in " ".join(_parse(everything).text) and "<b>x</b>" not in everything


def test_report_without_optional_tables_renders(onchip: Report) -> None:
    bare = Report.build(onchip.meta, tiles=onchip.tiles, categories=onchip.categories)
    page = HtmlRenderer().render(bare)
    text = " ".join(" ".join(_parse(page).text).split())
    # a folded section's headline says what its body says
    assert "Execution No execution profile in this report No execution profile in this report." in text
    assert "no remote buffers: nothing is kept in Streaming Memory" in text
    assert "no variables in this report" in text


def test_rendering_is_deterministic(comparison) -> None:
    renderer = HtmlRenderer()
    assert renderer.render(comparison, top=7) == renderer.render(comparison, top=7)
