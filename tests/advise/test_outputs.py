"""advise.json, advise.csv and advise.html: the schema users and CI read, and knob text from
users and workloads escaped everywhere."""

from __future__ import annotations

import io
import json
import math

import pandas as pd

from profcompare.analysis.advise_results import POINT_FIELDS, POINT_METRICS, Evaluated, Machine, advise_verdict, point_frame
from profcompare.render.advise import advise_csv, advise_document, front_table, render_advise_html
from profcompare.render.advise_words import advise_sentences

HOSTILE = "</script><b>bold</b>'\"&"
CONTROL = "x\x1b[2Jy"


def _evaluated(label, variant, rate, tile, status="ok"):
    metrics = {m: math.nan for m in POINT_METRICS}
    metrics.update({"samples_per_second": rate, "max_tile_bytes": tile, "tiles_over_budget": 0.0 if status == "ok" else 3.0,
                    "bytes_per_tile": 638_976.0, "always_live_bytes": 1024.0, "not_always_live_peak_bytes": 2048.0,
                    "streaming_memory_bytes": 0.0, "code_bytes": 512.0, "num_replicas": 1.0, "seconds_per_step": 0.5})
    return Evaluated({"variant": variant, "note": HOSTILE}, label, status, None, metrics)


def _outputs():
    evaluated = [_evaluated("p1", "onchip", 200.0, 1000.0), _evaluated("p2", HOSTILE, 100.0, 500.0),
                 _evaluated("p4", CONTROL, 10.0, 2000.0),
                 _evaluated("p3", "onchip", 400.0, 900_000.0, status="oom")]
    points = point_frame(("variant", "note"), evaluated, [({"variant": "x", "note": HOSTILE}, "pruned <i>why</i>")],
                         Machine.of(4))
    facts = advise_verdict(points, workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=3,
                           pruned={"pruned <i>why</i>": 1})
    verdict = " ".join(advise_sentences(facts))
    meta = {"name": "run", "workload": "mnist", "ipus": 4, "global_batch": 256, "global_batch_rule": "a x b",
            "method": "exhaustive", "budget": None, "seed": None, "base_config": {"hidden": HOSTILE},
            "headline": ["note"], "notes": [HOSTILE], "streaming_memory_bytes": 450e9}
    return points, facts, verdict, meta


def test_json_document_schema():
    points, facts, verdict, meta = _outputs()
    document = json.loads(json.dumps(advise_document(points, facts, verdict, meta), allow_nan=False))
    assert document["schema_version"] == 1 and document["verdict"] == verdict
    assert document["pruned"] == {"pruned <i>why</i>": 1}
    assert document["front"] == ["p1", "p2"]
    assert [list(p) for p in document["points"]] == [list(POINT_FIELDS)] * 5
    assert document["points"][0] == {"knobs": {"variant": "onchip", "note": HOSTILE}, "status": "ok", "reason": None,
                                     "fits": True, "pareto": True, "samples_per_second": 200.0,
                                     "max_tile_bytes": 1000.0, "run_dir": "p1"}
    assert document["points"][3]["fits"] is False and document["points"][3]["reason"] == "tiles over budget"
    assert document["points"][4] == {"knobs": {"variant": "x", "note": HOSTILE}, "status": "pruned",
                                     "reason": "pruned <i>why</i>", "fits": False, "pareto": False,
                                     "samples_per_second": None, "max_tile_bytes": None, "run_dir": None}


def test_csv_has_every_point_one_row_each():
    points, *_ = _outputs()
    table = pd.read_csv(io.StringIO(advise_csv(points)), keep_default_na=False)
    assert len(table) == 5
    assert list(table.columns[:7]) == ["label", "variant", "note", "status", "reason", "fits", "pareto"]
    assert list(table["status"]) == ["ok", "ok", "ok", "oom", "pruned"]
    assert table.loc[1, "variant"] == HOSTILE and table.loc[0, "samples_per_second"] == "200.0"
    assert table.loc[2, "variant"] == "x\\x1b[2Jy"  # control characters as escapes, as in every csv export


def test_html_escapes_hostile_knob_text():
    points, facts, verdict, meta = _outputs()
    page = render_advise_html(points, facts, verdict, meta, pages={"p1": "p1/report.html"})
    assert "<b>bold</b>" not in page and "<i>why</i>" not in page
    assert "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page  # in the tables and the verdict
    # in the chart's JSON and the embedded data only as JSON escapes: no element can end early
    assert page.count("</script>") == page.count("<script")
    assert "compile only: memory and time modelled" in page.lower()
    assert page.index('id="verdict"') < page.index('id="advise-chart"') < page.index('id="front-table"')
    # only pages that exist are links: a point without a report page links nowhere (its run
    # directory would open as a bare listing); the chart sends a click on it to its row
    assert 'href="p1/report.html"' in page and 'href="p2/"' not in page
    assert '<tr id="point-1"><td class="text front" title="run directory: p2/">' in page
    data = page.split('<script type="application/json" id="advise-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["points"][1]["knobs"]["variant"] == HOSTILE


def test_front_table_for_the_terminal():
    points, *_ = _outputs()
    table = front_table(points, ("note",))
    assert [c.header for c in table.columns] == ["Layout", "Samples/s", "Fullest tile", "Always-live",
                                               "Not-always-live peak", "Streaming Memory", "Code"]
    assert [[cell.text for cell in row] for row in table.rows] == [
        [f"onchip, note={HOSTILE}", "200.0", "1000 B", "1.0 KiB", "2.0 KiB", "0 B", "512 B"],
        [f"{HOSTILE}, note={HOSTILE}", "100.0", "500 B", "1.0 KiB", "2.0 KiB", "0 B", "512 B"],
    ]


def test_a_point_without_throughput_is_drawn_at_zero():
    from profcompare.render.advise import advise_chart

    points, *_ = _outputs()
    oom = points["status"] == "oom"
    points.loc[oom, "samples_per_second"] = math.nan  # out of memory: no execution profile
    item = json.dumps(advise_chart(points, ("note",), {}))
    assert "not known (no execution profile)" in item


def test_notebook_view_escapes_and_shows_the_front():
    from profcompare.render.advise import advise_notebook_html

    points, facts, *_ = _outputs()
    html = advise_notebook_html(points, facts, workload="mnist", directory="<dir>", headline=("note",))
    assert "<b>bold</b>" not in html and "&lt;dir&gt;" in html
    assert html.count("<tr>") == 1 + 2  # the header and the two front points


def _flat_tiles():
    """Three fitting layouts whose fullest tiles lie within 0.1% (210.5 to 210.6 KiB, as every
    MNIST layout's) while their always-live + not-always-live peak varies."""
    evaluated = []
    for label, tile, always, peak, rate in (("p1", 215_528.0, 40 * 2**20, 14 * 2**20, 200.0),
                                            ("p2", 215_592.0, 50 * 2**20, 16 * 2**20, 150.0),
                                            ("p3", 215_656.0, 60 * 2**20, 20 * 2**20, 100.0)):
        point = _evaluated(label, "onchip", rate, tile)
        point.metrics.update({"always_live_bytes": float(always), "not_always_live_peak_bytes": float(peak)})
        evaluated.append(point)
    return point_frame(("variant", "note"), evaluated, [], Machine.of(4))


def test_a_chart_of_flat_fullest_tiles_plots_what_varies():
    from profcompare.render.advise import chart_axis

    points = _flat_tiles()
    axis = chart_axis(points)
    assert not axis.fullest_tile
    assert axis.label == "always-live + not-always-live peak (MiB per replica)"
    assert axis.values.tolist() == [54.0, 66.0, 80.0]
    assert axis.note == (
        "Every layout's fullest tile lies within 1% (210.5 KiB to 210.6 KiB), so the chart plots what does vary "
        "between layouts: always-live + not-always-live peak, per replica (54.0 MiB to 80.0 MiB). The Pareto "
        "front is still the one of samples per second against the fullest tile.")
    # with spread in the fullest tile, the axis is the fullest tile
    _, facts, _, _ = _outputs()
    spread = _outputs()[0]
    tiles = chart_axis(spread[spread["status"] != "pruned"])
    assert tiles.fullest_tile and tiles.label == "fullest tile (KiB per tile, including gaps)" and tiles.note == ""


def test_the_front_is_marked_even_of_one_point_and_the_legend_is_outside():
    from profcompare.render.advise import advise_chart

    points = _flat_tiles()
    assert int(points["pareto"].sum()) == 1
    item = advise_chart(points, ("note",), {"p1": "p1/report.html"})
    models = json.dumps(item)
    assert '"Pareto front"' in models  # the ring's legend entry: drawn for a single front point
    figure = item["doc"]["roots"][0]["attributes"]
    assert [m.get("name") for m in figure["right"]] == ["Legend"]
    assert "Legend" not in [m.get("name") for m in figure["center"]]
    # a click opens one page: the first point under the pointer (a report page, else its row)
    assert "indices[0]" in models and "OpenURL" not in models
    assert '"p1/report.html"' in models and '"#point-1"' in models and '"#point-2"' in models
