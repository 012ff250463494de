"""The page's charts are written as BokehJS documents without Bokeh's Python models
(profcompare.render.bokeh_doc): every chart is checked against the JSON Bokeh itself writes for
the same models, the inlined library against Bokeh's own inline resources, and rendering a page
against importing ``bokeh.models``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from html_fixtures import ESCAPE_NAME
from test_trace_view import BASE_BLOCKS, NEW_BLOCKS, _with_trace

from profcompare.comparison import compare
from profcompare.model import Report
from profcompare.analysis.tile_detail import tile_histogram
from profcompare.render import bar_charts, bokeh_doc, interactive, tile_map
from profcompare.render.lifetime_chart import lifetime_chart
from profcompare.render.trace_chart import trace_chart


def _to_bokeh(root: bokeh_doc.Model) -> Any:
    """The same model graph built from Bokeh's Python models (shared models stay shared); a
    name or attribute Bokeh does not know, or a value it refuses, raises here."""
    from bokeh.model import Model as BokehModel
    from bokeh.models import Plot

    made: dict[int, Any] = {}

    def convert(v: Any) -> Any:
        if isinstance(v, bokeh_doc.Model):
            if id(v) not in made:
                # Figure is bokeh.plotting's Plot subclass: no properties of its own
                cls = Plot if v.name == "Figure" else BokehModel.model_class_reverse_map[v.name]
                made[id(v)] = cls(**{k: convert(x) for k, x in v.attributes.items()})
            return made[id(v)]
        if isinstance(v, bokeh_doc.Map):
            return {convert(k): convert(x) for k, x in v.entries}
        if isinstance(v, list):
            return [convert(x) for x in v]
        if isinstance(v, dict):
            if v.get("type") == "field":  # as bokeh.plotting's glyph methods are given a column
                return v["field"]
            if v.get("type") == "value":
                return convert(v["value"])
            return {k: convert(x) for k, x in v.items()}
        return v

    return convert(root)


def _bokeh_item(root: bokeh_doc.Model) -> dict[str, Any]:
    """``bokeh.embed.json_item`` of ``root`` built by Bokeh, ids renamed in order of appearance."""
    from bokeh.embed import json_item

    prefix = root.attributes["name"]
    ids: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ids.setdefault(x, f"{prefix}-{len(ids) + 1}") if k in ("id", "root_id") and isinstance(x, str)
                    else rename(x) for k, x in value.items()}
        if isinstance(value, (list, tuple)):  # a map's entries come as tuples (JSON writes lists)
            return [rename(x) for x in value]
        return value

    item = rename(json_item(_to_bokeh(root)))
    item["doc"]["roots"][0]["name"] = "Figure"
    return item  # type: ignore[no-any-return]


@pytest.fixture()
def roots(monkeypatch: pytest.MonkeyPatch) -> list[bokeh_doc.Model]:
    """Every Figure model the charts write while the test runs."""
    seen: list[bokeh_doc.Model] = []
    original = bokeh_doc.json_item

    def record(root: bokeh_doc.Model) -> dict[str, Any]:
        seen.append(root)
        return original(root)

    monkeypatch.setattr(bokeh_doc, "json_item", record)
    return seen


def _charts(onchip: Report, offchip: Report) -> list[interactive.InteractiveChart]:
    base, new = _with_trace(onchip, BASE_BLOCKS), _with_trace(offchip, NEW_BLOCKS)
    diff = compare(onchip, offchip)
    aligned = diff.liveness
    return [
        interactive.liveness_chart([onchip, offchip], ["base", "new"], aligned=aligned),
        interactive.liveness_chart([onchip], ["report"]),
        interactive.liveness_chart([onchip, offchip], ["base", "new"], max_buckets=7),
        interactive.tiles_chart([onchip, offchip], ["base", "new"]),
        interactive.tiles_chart([onchip], ["report"], max_buckets=5000),
        trace_chart([base], ["report"]),
        trace_chart([base, new], ["base", "new"]),
        trace_chart([base, new], ["base", "new"], max_blocks=3, bins=5),
        trace_chart([onchip], ["report"]),  # no trace: the empty chart
        interactive._empty_chart("chart-x", ESCAPE_NAME),
        bar_charts.categories_chart([onchip, offchip], ["base", "new"]),
        bar_charts.categories_chart([onchip], ["report"]),
        bar_charts.code_chart([onchip, offchip], ["base", "new"]),
        bar_charts.execution_chart([onchip, offchip], ["base", "new"]),
        bar_charts.execution_chart([onchip], ["report"]),
        bar_charts.ledger_chart(diff),
        tile_map.tile_map_chart(onchip),
        tile_map.tile_map_chart(diff),
        tile_map.histogram_chart(tile_histogram(onchip, offchip), ("base", "new")),
        tile_map.histogram_chart(tile_histogram(onchip), ("report",)),
        lifetime_chart(diff),
    ]


def test_every_chart_is_the_json_bokeh_writes(onchip: Report, offchip: Report, roots: list[bokeh_doc.Model]) -> None:
    charts = _charts(onchip, offchip)
    assert len(roots) == len(charts)
    for chart, root in zip(charts, roots, strict=True):
        # key order matters (the page keeps it): compare the text, not the parsed values
        assert json.dumps(chart.item) == json.dumps(_bokeh_item(root)), chart.id


def test_shared_models_are_written_once_then_referenced(onchip: Report, offchip: Report) -> None:
    item = interactive.liveness_chart([onchip, offchip], ["base", "new"], max_buckets=7).item
    full: list[str] = []
    refs: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if v.get("type") == "object":
                full.append(v["id"])
            elif set(v) == {"id"}:
                refs.append(v["id"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(item["doc"])
    assert len(full) == len(set(full))  # each model in full once
    assert set(refs) <= set(full)
    assert full[:3] == ["chart-liveness-2", "chart-liveness-3", "chart-liveness-1"]  # config, then the figure
    assert item["root_id"] == "chart-liveness-1"


def test_arrays_and_special_numbers_are_written_as_bokeh_does() -> None:
    import numpy as np

    fig = bokeh_doc.Figure("c", height=10, x_range=bokeh_doc.data_range(), y_range=bokeh_doc.data_range())
    source = bokeh_doc.data_source({"x": np.array([1.0, np.nan]), "n": np.array([1, 2], dtype="int64"),
                                    "big": np.array([2**40, 1], dtype="int64"), "y": [float("inf"), -float("inf")],
                                    "s": np.array(["a", "b"])})
    fig.glyph("Line", source, x="x", y="y", line_color="red")
    root = fig.model()
    assert json.dumps(bokeh_doc.json_item(root)) == json.dumps(_bokeh_item(root))


def test_an_unknown_attribute_is_refused() -> None:
    with pytest.raises(ValueError, match="not in the model's order"):
        bokeh_doc.data_range(colour="red")
    fig = bokeh_doc.Figure("c", height=10, x_range=bokeh_doc.data_range(), y_range=bokeh_doc.data_range())
    with pytest.raises(ValueError, match="not in the model's order"):
        fig.glyph("Step", bokeh_doc.data_source({}), x="x", y="y", fill_color="red")


def test_inlined_library_is_bokehs_inline_resource() -> None:
    from bokeh.resources import Resources

    assert bokeh_doc.inline_js() == "\n".join(Resources(mode="inline", components=["bokeh"]).js_raw)


def test_a_page_with_charts_imports_no_bokeh_models(tmp_path: Any) -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = {sys.path[:1] + [str(__import__('pathlib').Path(__file__).parent)]!r}
        from html_fixtures import build_report
        from profcompare.render.html import render_page, build_page
        from profcompare.comparison import compare
        page = render_page(build_page(compare(build_report("onchip"), build_report("offchip"))))
        assert "chart-liveness" in page and "chart-tiles" in page
        print(sorted(m for m in sys.modules if m.partition(".")[0] in ("bokeh", "matplotlib")))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOKEH_")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env).stdout
    loaded = json.loads(out.strip().replace("'", '"'))
    assert not [m for m in loaded if m.startswith(("bokeh.models", "bokeh.plotting", "bokeh.embed", "bokeh.model"))]
    assert not [m for m in loaded if m.startswith("matplotlib")]  # the bar charts are BokehJS documents too
    if not (Path.home() / ".bokeh" / "bokeh.yaml").exists():
        assert loaded == []  # Bokeh's default settings and version read without importing it


def test_bokehs_default_settings_are_bokehs(monkeypatch: pytest.MonkeyPatch) -> None:
    import bokeh
    from bokeh.settings import settings

    for name in [n for n in os.environ if n.startswith("BOKEH_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(bokeh_doc, "_settings_may_be_set", lambda: False)
    monkeypatch.delitem(sys.modules, "bokeh")  # as in a process that has not imported it
    try:
        fast = bokeh_doc._settings()
    finally:
        sys.modules["bokeh"] = bokeh
    assert fast.version == bokeh.__version__
    assert fast.compression_level == settings.compression_level.default == settings.compression_level()
    assert (fast.dev, fast.minified, fast.log_level) == (settings.dev, settings.minified(), settings.log_level())
    assert fast.bokehjs_path.resolve() == Path(settings.bokehjs_path()).resolve()


def test_a_bokeh_setting_in_the_environment_is_bokehs_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOKEH_COMPRESSION_LEVEL", "5")
    assert bokeh_doc._settings_may_be_set()
    assert bokeh_doc._settings().compression_level == 5  # Bokeh's own settings, environment included
